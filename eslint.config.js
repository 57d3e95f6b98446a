// ESLint with typescript-eslint (issue 20 item 6): the recommended rules of both, and the
// type-aware rules that pay in a streaming service: a promise nobody awaits or catches
// (no-floating-promises) and a promise where a callback's result is ignored
// (no-misused-promises). Formatting is Prettier's (.prettierrc.json), checked by `npm run lint`.
//
// Not on yet: no-unnecessary-condition. Measured on this code it reports 233 places, and most are
// not dead code: 159 are `?.` and `??` after an index into an array or a record, which the
// compiler types as always present because tsconfig lacks noUncheckedIndexedAccess (143 compile
// errors to settle first), and most of the rest are the checks public functions make of values
// a JavaScript caller or the network hands them. Turning on noUncheckedIndexedAccess comes first.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'web/dist/**', 'training/data/**', '.scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['vitest.config.ts'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // `_name` marks a parameter or binding kept on purpose (a callback's shape, a rest split).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // The few plain scripts (build helpers, the pre-start build check): Node's globals, no types.
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        Buffer: 'readonly',
      },
    },
  },
);
