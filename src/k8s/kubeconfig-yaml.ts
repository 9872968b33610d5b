// A kubeconfig's YAML, parsed. A module of its own, imported by connection.ts only when it reads a
// kubeconfig (a pod's service account needs no parser): a static import of the package here is
// what a bundler resolves to its named exports, as Node does (a dynamic import of the CommonJS
// package itself would hand a bundle only its default export).
import { parse } from 'yaml';

export const parseKubeconfig = (text: string): unknown => parse(text);
