// The JavaScript of the package, its tests, scripts and benchmarks: ESLint's recommended
// rules, with the globals of each kind of file. Formatting is Prettier's (.prettierrc.json).
import js from '@eslint/js';
import globals from 'globals';

export default [
  {
    ignores: ['index.js', 'target/**', 'node_modules/**', '.runtimes/**', '.venv/**', '.ci/**', '.test-deps/**', 'npm/**', 'fuzz/**', 'bench-results/**'],
  },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node } },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: { ...globals.node } },
  },
  {
    rules: {
      // `catch {}` around best-effort cleanup is deliberate.
      'no-empty': ['error', { allowEmptyCatch: true }],
      // `const { dropped, ...kept } = x` leaves `dropped` out on purpose.
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // Terminal output is cleaned of control characters by matching them.
      'no-control-regex': 'off',
    },
  },
];
