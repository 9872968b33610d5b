import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { crdFiles, renderCRD, structural } from './generate.ts';

const root = resolve(import.meta.dirname, '..', '..');

describe('generated CRDs', () => {
  it.each(Object.keys(crdFiles))('%s matches the schema in src/crds (run `npm run crds` after changing it)', (file) => {
    expect(readFileSync(resolve(root, file), 'utf8')).toBe(renderCRD(crdFiles[file] ?? null));
  });

  it('turns unions of literals into enums, which structural schemas require', () => {
    expect(structural({ anyOf: [{ const: 'None', type: 'string' }, { const: 'Auto', type: 'string' }], default: 'None' })).toEqual({
      default: 'None',
      type: 'string',
      enum: ['None', 'Auto'],
    });
  });

  it('keeps the CEL rules on the spec', () => {
    const manifest = parse(readFileSync(resolve(root, Object.keys(crdFiles)[0] as string), 'utf8'));
    const spec = manifest.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(spec['x-kubernetes-validations'].map((r: { rule: string }) => r.rule)).toContain('has(self.size) != has(self.increment)');
  });
});
