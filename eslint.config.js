// ESLint with typescript-eslint (issue 20 item 6): the recommended rules of both, and the
// type-aware rules that pay in a streaming service: a promise nobody awaits or catches
// (no-floating-promises), a promise where a callback's result is ignored (no-misused-promises),
// and a condition the types say is always or never true (no-unnecessary-condition).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'web/dist/**', 'training/data/**', '.scratch/**', '**/*.js', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unnecessary-condition': 'error',
    },
  },
);
