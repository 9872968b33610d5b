// The layering of src/ (ARCHITECTURE.md's map), as a test over every module that ships (test code aside):
// rooms are stacked, each imports only itself and the rooms below it; no two modules import each
// other, directly or round a longer circle; the decisions (policies/) stay pure; the client (k8s/)
// never reaches up into the runtime, the decisions or the commands; the CRD schemas import nothing
// of pvx; nothing that ships imports test code; and a command src/cli/commands.ts marks read-only
// reaches nothing of the operator. A failure names each offending import as
// "src/FILE imports src/FILE ('specifier')".
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commands } from './cli/commands.ts';
import { cycles, importsOf, isTestCode, reachable, sourceFiles } from './import-graph.testing.ts';

const src = dirname(fileURLToPath(import.meta.url));

/** One import of a module, its paths relative to src/ ('policies/request/decide.ts'). */
interface Edge {
  from: string;
  /** The file a relative specifier names; undefined for a package. */
  to: string | undefined;
  specifier: string;
  typeOnly: boolean;
  dynamic: boolean;
}

/**
 * The rooms from the ground up. A module imports modules of its own room and of rooms on lower
 * floors only — never one above it, nor one beside it on the same floor. A new room needs a floor
 * here.
 */
const floors: Readonly<Record<string, number>> = {
  crds: 0, //          CRD schemas, their types and defaults
  k8s: 1, //           the KubeClient port and its implementations
  policies: 2, //      pure decisions
  usage: 3, //         usage sources (kubelet, Prometheus)
  metrics: 3, //       metric definitions
  operator: 4, //      runtime, reconcilers, endpoints, wiring
  observability: 4, // the dashboard and alert generators
  cli: 5, //           commands
};

/**
 * What a decision (src/policies/**) may import: nothing that does I/O, reads a clock or arms a
 * timer — only other decisions, the CRD types, the pure helpers of k8s/ and the KubeClient port's
 * types, and these packages.
 */
const decisionsMayImport = {
  rooms: ['policies', 'crds'],
  /** Quantities; the resource types, object keys and what the cache keeps of a claim. */
  k8sModules: ['k8s/quantity.ts', 'k8s/resources.ts'],
  /** The port's types (EventRecord, PolicyRef), never a value: loading it is the client's business. */
  k8sTypesOnly: ['k8s/client.ts'],
  /** croner: a window's openings; node:crypto: hashes for generated names; node:util: deep equality. */
  packages: ['croner', 'node:crypto', 'node:util'],
  packagesTypesOnly: ['@kubernetes/client-node'],
};

/**
 * The rooms inside src/policies/, from the ground up: what a claim is and the shared helpers; the
 * driver budgets; a request's decisions; a policy's; the audit, which reads them all; and why, which
 * explains all of it. A room imports its own, and the rooms below it only.
 */
const policyFloors: Readonly<Record<string, number>> = {
  claim: 0,
  shared: 0,
  budget: 1,
  request: 2,
  autoscale: 3,
  audit: 4,
  why: 5,
};

/** Packages that only tests use. */
const testPackages = ['vitest', 'fast-check', '@fast-check/vitest', '@sinonjs/fake-timers'];

const roomOf = (file: string): string => file.split('/')[0] as string;
const isIn = (room: string, file: string | undefined): boolean => file !== undefined && roomOf(file) === room && file.includes('/');
const shown = (e: Edge): string =>
  `src/${e.from} imports ${e.to === undefined ? `package ${e.specifier}` : `src/${e.to}`} ('${e.specifier}'${e.typeOnly ? ', type only' : ''}${e.dynamic ? ', dynamic' : ''})`;

const policyRoomOf = (file: string): string | undefined => (isIn('policies', file) ? file.split('/')[1] : undefined);

/** Each rule: whether an import is allowed. */
const rules = {
  /** 2. A decision imports no client, runtime, command, usage source or metric, and no package that does I/O. */
  decisionsArePure(this: void, e: Edge): boolean {
    if (!isIn('policies', e.from)) return true;
    if (e.to === undefined) {
      return decisionsMayImport.packages.includes(e.specifier) || (e.typeOnly && decisionsMayImport.packagesTypesOnly.includes(e.specifier));
    }
    return (
      decisionsMayImport.rooms.some((r) => isIn(r, e.to)) ||
      decisionsMayImport.k8sModules.includes(e.to) ||
      (e.typeOnly && decisionsMayImport.k8sTypesOnly.includes(e.to))
    );
  },
  /** 3. The client imports only the client and the CRD types: never the runtime, the decisions, the commands. */
  clientStaysDown(this: void, e: Edge): boolean {
    return !isIn('k8s', e.from) || e.to === undefined || isIn('k8s', e.to) || isIn('crds', e.to);
  },
  /** 4. The CRD schemas import nothing of pvx but themselves. */
  crdsAtTheBottom(this: void, e: Edge): boolean {
    return !isIn('crds', e.from) || e.to === undefined || isIn('crds', e.to);
  },
  /** 5. Nothing that ships imports test code (src/k8s/testing/, *.testing.ts, tests) or a test framework. */
  noTestCodeShips(this: void, e: Edge): boolean {
    return e.to === undefined ? !testPackages.some((p) => e.specifier === p || e.specifier.startsWith(`${p}/`)) : !isTestCode(e.to);
  },
  /** Inside src/policies/, each room imports only itself and the rooms below it (policyFloors). */
  policyRoomsInOrder(this: void, e: Edge): boolean {
    const [from, to] = [policyRoomOf(e.from), e.to === undefined ? undefined : policyRoomOf(e.to)];
    if (from === undefined || to === undefined || from === to) return true;
    const [f, t] = [policyFloors[from], policyFloors[to]];
    return f !== undefined && t !== undefined && t < f;
  },
  /** Each room imports only itself and the rooms on lower floors. */
  roomsImportDownward(this: void, e: Edge): boolean {
    if (e.to === undefined || roomOf(e.from) === roomOf(e.to)) return true;
    const [from, to] = [floors[roomOf(e.from)], floors[roomOf(e.to)]];
    return from !== undefined && to !== undefined && to < from;
  },
};

const rel = (file: string): string => relative(src, file);
const modules = sourceFiles(src)
  .filter((f) => !isTestCode(f))
  .map(rel);
const edges: Edge[] = modules.flatMap((from) =>
  importsOf(`${src}/${from}`).map((i) => ({
    from,
    to: i.file === undefined ? undefined : rel(i.file),
    specifier: i.specifier,
    typeOnly: i.typeOnly,
    dynamic: i.dynamic,
  })),
);
const violations = (rule: (e: Edge) => boolean, of: readonly Edge[] = edges): string[] => of.filter((e) => !rule(e)).map(shown);

/** The circles among the modules, following static imports (type-only ones included), each with the imports that close it. */
function circles(of: readonly Edge[]): string[][] {
  const graph = new Map<string, string[]>();
  for (const e of of) {
    if (!graph.has(e.from)) graph.set(e.from, []);
    if (e.to !== undefined && !e.dynamic) graph.get(e.from)?.push(e.to);
  }
  return cycles(graph).map((files) => of.filter((e) => !e.dynamic && files.includes(e.from) && e.to !== undefined && files.includes(e.to)).map(shown));
}

describe('the layering of src/', () => {
  it('reads every module that ships, and their imports', () => {
    expect(modules.length).toBeGreaterThan(100);
    expect(modules).toContain('policies/request/decide.ts');
    expect(modules).not.toContain('k8s/testing/fake-client.ts');
    expect(edges.find((e) => e.from === 'k8s/fenced-client.ts' && e.to === 'k8s/errors.ts')).toBeDefined();
  });

  it('1. has no circle of imports: no two modules import each other, directly or round a longer circle', () => {
    expect(circles(edges)).toEqual([]);
  });

  it('2. keeps the decisions (src/policies/) pure: no client, runtime, command, usage source or I/O package', () => {
    expect(violations(rules.decisionsArePure)).toEqual([]);
  });

  it('3. keeps the client (src/k8s/) off the runtime, the decisions and the commands', () => {
    expect(violations(rules.clientStaysDown)).toEqual([]);
  });

  it('4. keeps the CRD schemas (src/crds/) at the bottom: they import nothing of pvx', () => {
    expect(violations(rules.crdsAtTheBottom)).toEqual([]);
  });

  it('5. ships no test code: nothing outside tests imports src/**/testing/, a *.testing.ts or a test framework', () => {
    expect(violations(rules.noTestCodeShips)).toEqual([]);
  });

  it('gives every room a floor, and each room imports only the rooms below it', () => {
    expect([...new Set(modules.map(roomOf))].filter((room) => floors[room] === undefined)).toEqual([]);
    expect(violations(rules.roomsImportDownward)).toEqual([]);
  });

  it('orders the rooms inside src/policies/ (claim, shared → budget → request → autoscale → audit → why): each imports only those below it', () => {
    const rooms = [...new Set(modules.filter((m) => isIn('policies', m) && m.split('/').length > 2).map((m) => m.split('/')[1] as string))];
    expect(rooms.filter((room) => policyFloors[room] === undefined)).toEqual([]);
    expect(violations(rules.policyRoomsInOrder)).toEqual([]);
  });

  it('is the map ARCHITECTURE.md draws: each room on its floor', () => {
    const map = readFileSync(resolve(src, '..', 'ARCHITECTURE.md'), 'utf8');
    const drawn = map
      .split('\n')
      .filter((line) => /^\| \d+ \| `src\//.test(line))
      .flatMap((line) => {
        const [, floor, rooms = ''] = line.split('|').map((cell) => cell.trim());
        return [...rooms.matchAll(/`src\/(\w+)\/`/g)].map((m) => [m[1] as string, Number(floor)] as const);
      });
    expect(Object.fromEntries(drawn)).toEqual(floors);
  });

  const readOnly = Object.entries(commands)
    .filter(([, spec]) => spec.readOnly)
    .map(([name]) => name);

  it('6. reaches nothing of the operator from a command src/cli/commands.ts marks read-only, directly or through any module', () => {
    expect(readOnly).toEqual(expect.arrayContaining(['audit', 'plan', 'why', 'df', 'status', 'wait']));
    // The walk follows imports: a command reaches the decisions it is made of, and pvx run the operator.
    expect([...reachable(resolve(src, 'cli/run.ts')).keys()].some((f) => f.startsWith(resolve(src, 'operator') + '/'))).toBe(true);
    expect(reachable(resolve(src, 'cli/plan.ts')).has(resolve(src, 'policies/autoscale/policy-pass.ts'))).toBe(true);
    const intoOperator = readOnly.flatMap((command) =>
      [...reachable(resolve(src, `cli/${command}.ts`))]
        .filter(([file]) => file.startsWith(resolve(src, 'operator') + '/'))
        .map(([, path]) => `pvx ${command}: ${path.map((f) => `src/${rel(f)}`).join(' → ')}`),
    );
    expect(intoOperator).toEqual([]);
  });

  describe('catches what it is meant to catch', () => {
    const edge = (from: string, to: string | undefined, specifier = to ?? '', o: Partial<Edge> = {}): Edge => ({
      from,
      to,
      specifier,
      typeOnly: false,
      dynamic: false,
      ...o,
    });

    it('a circle, and only a circle', () => {
      const a = edge('policies/a.ts', 'policies/b.ts');
      const b = edge('policies/b.ts', 'policies/c.ts');
      expect(circles([a, b])).toEqual([]);
      expect(circles([a, b, edge('policies/c.ts', 'policies/a.ts', './a.ts', { typeOnly: true })])).toEqual([
        [
          "src/policies/a.ts imports src/policies/b.ts ('policies/b.ts')",
          "src/policies/b.ts imports src/policies/c.ts ('policies/c.ts')",
          "src/policies/c.ts imports src/policies/a.ts ('./a.ts', type only)",
        ],
      ]);
      expect(circles([a, edge('policies/b.ts', 'policies/a.ts', './a.ts', { dynamic: true })])).toEqual([]);
    });

    it('each rule, an import that breaks it', () => {
      const bad: [keyof typeof rules, Edge][] = [
        ['decisionsArePure', edge('policies/why/gates.ts', 'k8s/http-client.ts')],
        ['decisionsArePure', edge('policies/why/gates.ts', 'k8s/client.ts')],
        ['decisionsArePure', edge('policies/why/gates.ts', 'operator/runtime/controller.ts')],
        ['decisionsArePure', edge('policies/why/gates.ts', 'k8s/informer.ts')],
        ['decisionsArePure', edge('policies/why/gates.ts', 'usage/kubelet.ts')],
        ['decisionsArePure', edge('policies/why/gates.ts', undefined, 'node:fs')],
        ['decisionsArePure', edge('policies/why/gates.ts', undefined, '@kubernetes/client-node')],
        ['clientStaysDown', edge('k8s/fenced-client.ts', 'operator/runtime/errors.ts')],
        ['clientStaysDown', edge('k8s/informer.ts', 'metrics/runtime.ts', '', { typeOnly: true })],
        ['clientStaysDown', edge('k8s/client.ts', 'policies/budget/drivers.ts', '', { typeOnly: true })],
        ['crdsAtTheBottom', edge('crds/defaults.ts', 'k8s/quantity.ts')],
        ['noTestCodeShips', edge('operator/wiring.ts', 'k8s/testing/fake-client.ts')],
        ['noTestCodeShips', edge('cli/why.ts', 'policies/claim/claims.testing.ts')],
        ['noTestCodeShips', edge('cli/why.ts', undefined, 'vitest')],
        ['roomsImportDownward', edge('metrics/runtime.ts', 'operator/runtime/workqueue.ts', '', { typeOnly: true })],
        ['roomsImportDownward', edge('usage/kubelet.ts', 'metrics/runtime.ts')],
        ['policyRoomsInOrder', edge('policies/request/decide.ts', 'policies/autoscale/policy-pass.ts', '', { typeOnly: true })],
        ['policyRoomsInOrder', edge('policies/budget/budget.ts', 'policies/request/phase.ts')],
        ['policyRoomsInOrder', edge('policies/claim/resize.ts', 'policies/shared/duration.ts')],
      ];
      expect(bad.filter(([rule, e]) => rules[rule](e)).map(([rule, e]) => `${rule}: ${shown(e)}`)).toEqual([]);
      const good: Edge[] = [
        edge('policies/why/gates.ts', 'k8s/quantity.ts'),
        edge('policies/why/gates.ts', 'k8s/client.ts', '', { typeOnly: true }),
        edge('policies/why/gates.ts', undefined, '@kubernetes/client-node', { typeOnly: true }),
        edge('k8s/client.ts', 'crds/volume-expansion-request.ts', '', { typeOnly: true }),
        edge('cli/run.ts', 'operator/wiring.ts'),
      ];
      expect(
        good.flatMap((e) =>
          Object.entries(rules)
            .filter(([, rule]) => !rule(e))
            .map(([name]) => `${name}: ${shown(e)}`),
        ),
      ).toEqual([]);
    });
  });
});
