// CRD manifests from the TypeBox schemas: the schemas in src/crds/ are the single source, and
// config/crd/*.yaml is their generated form (`npm run crds` writes it, with docs/api.md; unit tests compare).
import { stringify } from 'yaml';
import { clusterVolumeExpansionPolicyCRD } from './cluster-volume-expansion-policy.ts';
import { apiReference } from './reference.ts';
import { volumeExpansionPolicyCRD } from './volume-expansion-policy.ts';
import { version, volumeExpansionRequestCRD } from './volume-expansion-request.ts';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/**
 * TypeBox → Kubernetes structural schema: unions of literals become enums (structural schemas
 * have no `const`), and TypeBox's own markers are dropped.
 */
export function structural(node: Json): Json {
  if (Array.isArray(node)) return node.map(structural);
  if (node === null || typeof node !== 'object') return node;
  const anyOf = node.anyOf;
  if (Array.isArray(anyOf) && anyOf.every((b) => b && typeof b === 'object' && !Array.isArray(b) && 'const' in b)) {
    const values = anyOf.map((b) => (b as { const: Json }).const);
    const { anyOf: _drop, ...rest } = node;
    return structural({ ...rest, type: typeof values[0] === 'number' ? 'number' : 'string', enum: values });
  }
  const out: { [k: string]: Json } = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'const' || k === '$id') continue;
    // TypeBox writes records as patternProperties, which structural schemas lack.
    if (k === 'patternProperties' && v && typeof v === 'object' && !Array.isArray(v)) {
      const [valueSchema] = Object.values(v);
      if (valueSchema !== undefined) out.additionalProperties = structural(valueSchema);
      continue;
    }
    out[k] = structural(v);
  }
  return out;
}

interface CRDSource {
  group: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  scope: 'Namespaced' | 'Cluster';
  spec: unknown;
  status: unknown;
  printerColumns: { name: string; type: string; jsonPath: string }[];
}

export function crdManifest(src: CRDSource): Json {
  const plain = (s: unknown) => structural(JSON.parse(JSON.stringify(s)) as Json);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${src.plural}.${src.group}`, labels: { 'app.kubernetes.io/name': 'pvx' } },
    spec: {
      group: src.group,
      names: { kind: src.kind, listKind: `${src.kind}List`, plural: src.plural, singular: src.singular, shortNames: src.shortNames, categories: ['pvx'] },
      scope: src.scope,
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: src.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: plain(src.spec),
                status: plain(src.status),
              },
            },
          },
        },
      ],
    },
  };
}

export const crdFiles: Record<string, Json> = Object.fromEntries(
  [volumeExpansionRequestCRD, volumeExpansionPolicyCRD, clusterVolumeExpansionPolicyCRD].map((c) => [`config/crd/${c.group}_${c.plural}.yaml`, crdManifest(c)]),
);

/** The API reference, generated beside the manifests. */
export const apiReferenceFile = 'docs/api.md';

export function renderCRD(manifest: Json): string {
  return `# Generated from src/crds/ by \`npm run crds\`; do not edit.\n${stringify(manifest, { lineWidth: 0 })}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { writeFileSync } = await import('node:fs');
  writeFileSync(apiReferenceFile, apiReference(Object.values(crdFiles)));
  process.stdout.write(`wrote ${apiReferenceFile}\n`);
  for (const [file, manifest] of Object.entries(crdFiles)) {
    // The Helm chart ships the same files (it cannot read outside its own directory); a shipping test keeps them equal.
    for (const target of [file, file.replace(/^config\/crd\//, 'charts/pvx/files/crds/')]) {
      writeFileSync(target, renderCRD(manifest));
      process.stdout.write(`wrote ${target}\n`);
    }
  }
}
