// ESLint over every TypeScript file tsconfig.json covers (src, test, bench, scripts, vitest.config.ts),
// with typescript-eslint's type-checked rules: the program tsc builds is the one the rules read, through
// the project service. `npm run lint` runs it, then prettier --check; the formatting rules are prettier's
// alone (none here). Rules are chosen for the bugs they find; those that only fight the house style are
// off, each with its reason.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // Built output, dependencies, run artefacts and the Helm chart (YAML and templates, no code).
  globalIgnores(['dist/', 'dist-*/', 'coverage/', 'charts/', '.test-results/', '.e2e-logs/', '.cluster/', '.demo/']),

  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // Promises: a dropped one loses its error (an unhandled rejection ends the process); one
      // handed where a callback's result is ignored (an event handler, a timer) does the same.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // `return promise` inside try/catch/finally skips the catch and runs the finally too early.
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      // Off: here an async function without await is deliberate. The fakes and stubs of async ports
      // (FakeKubeClient, usage sources, reconcile stubs) are async so that they reject, as the real
      // client does, rather than throw synchronously; wrappers such as connect.ts's are async to turn
      // a constructor's throw into a rejection. A forgotten await is what no-floating-promises catches.
      '@typescript-eslint/require-await': 'off',
      // Passing on a caught error as it was caught (unknown) is the house way: the callers classify it
      // (src/k8s/errors.ts). A literal that is not an Error is still refused.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'all',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          // `const { managedFields: _dropped, ...rest } = o` is how the tree drops a field.
          ignoreRestSiblings: true,
        },
      ],
      // Off: its check "the receiver accepts the original type" (not configurable) flags
      // `{ … } as V1Pod` handed to generic receivers such as FakeKubeClient.create<T>, where the
      // assertion names the kind and fixes T; without it T is the literal's type and the check is
      // looser. The assertions it found that changed nothing at all were removed.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // A `let` assigned once, after a closure that reads it was set up, cannot be a const: the
      // closure may run before the assignment (test/sim/simulation.ts's user).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      eqeqeq: ['error', 'always'],
      // The operator logs through pino, the CLI writes to the streams it is given.
      'no-console': 'error',
    },
  },
  {
    // Printing is the point of the simulator's CLI and summaries, the benchmarks, the scripts and
    // the e2e suites' measures.
    files: ['test/**', 'bench/**', 'scripts/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // Off in tests only: vitest's asymmetric matchers (expect.stringContaining, expect.any, …) are
    // typed `any`, and so is a parsed YAML manifest the CRD tests walk; the assertion then checks at
    // run time what the types cannot. Test helpers that are not tests keep the rules.
    files: ['**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // JavaScript files (this one, scripts/lib/*.mjs) are outside tsconfig.json: no type information.
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { process: 'readonly' } },
  },
);
