import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { apiReferenceFile, crdFiles, renderCRD, structural } from './generate.ts';
import { apiReference } from './reference.ts';

const root = resolve(import.meta.dirname, '..', '..');

describe('generated CRDs', () => {
  it.each(Object.keys(crdFiles))('%s matches the schema in src/crds (run `npm run crds` after changing it)', (file) => {
    expect(readFileSync(resolve(root, file), 'utf8')).toBe(renderCRD(crdFiles[file] ?? null));
  });

  it(`${apiReferenceFile} matches the schemas (run \`npm run crds\` after changing them)`, () => {
    expect(readFileSync(resolve(root, apiReferenceFile), 'utf8')).toBe(apiReference(Object.values(crdFiles)));
  });

  it('the API reference lists every spec field with its admission rules', () => {
    const doc = apiReference(Object.values(crdFiles));
    expect(doc).toMatch(/\| `spec.target.pvcName` \| `string` \|/);
    expect(doc).toMatch(/\| `spec.windows\[\].schedule` \|/);
    expect(doc).toMatch(/set guardrails, triggers or both/);
    expect(doc).toMatch(/\| `spec.mode` \| `Auto` \\\| `DryRun` \\\| `Approval` \|/);
  });

  it('turns unions of literals into enums, which structural schemas require', () => {
    expect(
      structural({
        anyOf: [
          { const: 'None', type: 'string' },
          { const: 'Auto', type: 'string' },
        ],
        default: 'None',
      }),
    ).toEqual({
      default: 'None',
      type: 'string',
      enum: ['None', 'Auto'],
    });
  });

  it('refuses a maintenance window that is not cron at admission (its pattern), and names the time-zone shape', () => {
    const manifest = parse(readFileSync(resolve(root, 'config/crd/pvx.dev_volumeexpansionpolicies.yaml'), 'utf8'));
    const window = manifest.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.windows.items.properties;
    const schedule = new RegExp(window.schedule.pattern);
    for (const ok of ['0 2 * * *', '*/15 1-5 * * MON-FRI', '0 0 2 * * *', '@daily', '0 3 1,15 * ?']) expect(ok).toMatch(schedule);
    for (const bad of ['every night', '0 2 * *', '', '0 2 * * * * * *', '@sometimes']) expect(bad).not.toMatch(schedule);
    const zone = new RegExp(window.timeZone.pattern);
    for (const ok of ['UTC', 'Europe/Berlin', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5']) expect(ok).toMatch(zone);
    for (const bad of ['', '/Berlin', 'Europe Berlin', '../etc']) expect(bad).not.toMatch(zone);
  });

  it('refuses a template update on a claim target, or without a size, at admission; both opt-ins default off', () => {
    const requests = parse(readFileSync(resolve(root, 'config/crd/pvx.dev_volumeexpansionrequests.yaml'), 'utf8'));
    const spec = requests.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(spec['x-kubernetes-validations'].map((r: { message: string }) => r.message)).toEqual(
      expect.arrayContaining([
        'statefulSetTemplate goes with target.statefulSetName (a StatefulSet request)',
        'a template update carries a size: set size or increment',
      ]),
    );
    expect(spec.properties.statefulSetTemplate.properties).toMatchObject({ update: { default: false }, evenIfManaged: { default: false } });
    expect(spec.properties.offlineNodeExpansion).toMatchObject({ default: 'Wait', enum: ['Wait', 'EvictPod'] });
    // The status names the record (kept in pvx's own namespace) and holds no StatefulSet: nothing a status writer puts there is created.
    const template = requests.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.statefulSetTemplate.properties;
    expect(template.recordName).toMatchObject({ type: 'string' });
    expect(template.record).toBeUndefined();
    expect(JSON.stringify(template)).not.toContain('x-kubernetes-preserve-unknown-fields');
    const policies = parse(readFileSync(resolve(root, 'config/crd/pvx.dev_volumeexpansionpolicies.yaml'), 'utf8'));
    const policySpec = policies.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(policySpec['x-kubernetes-validations'].map((r: { rule: string }) => r.rule)).toContain(
      '!has(self.statefulSetTemplate) || has(self.statefulSetName)',
    );
    expect(policySpec.properties.offlineNodeExpansion.default).toBe('Wait');
  });

  it('keeps the CEL rules on the spec: a size, a class or both; at most one way of sizing; a class name the API server would accept', () => {
    const manifest = parse(readFileSync(resolve(root, Object.keys(crdFiles)[0] as string), 'utf8'));
    const spec = manifest.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(spec['x-kubernetes-validations'].map((r: { rule: string }) => r.rule)).toEqual(
      expect.arrayContaining(['!(has(self.size) && has(self.increment))', 'has(self.size) || has(self.increment) || has(self.volumeAttributesClassName)']),
    );
    const vac = spec.properties.volumeAttributesClassName;
    expect(vac).toMatchObject({ type: 'string', maxLength: 253 });
    const name = new RegExp(vac.pattern);
    for (const ok of ['io2', 'gp3-fast', 'ebs.io2.v1', 'a']) expect(ok).toMatch(name);
    for (const bad of ['IO2', '-io2', 'io2-', 'io2..fast', '.io2', 'io_2', 'io 2', '']) expect(bad).not.toMatch(name);
  });
});

describe('bounds', () => {
  type Schema = {
    type?: string;
    items?: Schema;
    properties?: Record<string, Schema>;
    additionalProperties?: Schema | boolean;
    maxItems?: number;
    maxProperties?: number;
    maxLength?: number;
    enum?: unknown[];
    format?: string;
  };
  /** Every list without maxItems, map without maxProperties, and string inside either without maxLength, by path. */
  function unbounded(s: Schema, path: string, inCollection = false): string[] {
    const out: string[] = [];
    if (s.type === 'array') {
      if (s.maxItems === undefined) out.push(`${path}: a list without maxItems`);
      if (s.items) out.push(...unbounded(s.items, `${path}[]`, true));
    } else if (s.type === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object') {
      if (s.maxProperties === undefined) out.push(`${path}: a map without maxProperties`);
      out.push(...unbounded(s.additionalProperties, `${path}{}`, true));
    } else if (s.type === 'object') {
      for (const [k, v] of Object.entries(s.properties ?? {})) out.push(...unbounded(v, `${path}.${k}`, inCollection));
    } else if (s.type === 'string' && inCollection && s.maxLength === undefined && !s.enum && s.format !== 'date-time') {
      out.push(`${path}: a string in a list or map without maxLength`);
    }
    return out;
  }

  it.each(Object.keys(crdFiles))(
    '%s: every list and map has a bound, and so has every string in one (one object cannot be made to cost every reader)',
    (file) => {
      const manifest = parse(readFileSync(resolve(root, file), 'utf8'));
      const schema = manifest.spec.versions[0].schema.openAPIV3Schema as Schema;
      expect(unbounded(schema, '')).toEqual([]);
    },
  );
});
