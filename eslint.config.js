import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {ignores: ['node_modules/', 'dist/', 'build/', 'oclif.manifest.json']},
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        {argsIgnorePattern: '^_', varsIgnorePattern: '^_'},
      ],
    },
  },
  {files: ['src/lib/**/*.ts'], rules: {'no-console': 'error'}},
  {
    files: ['bin/**/*.js', 'scripts/**', 'bench/**', 'test/**'],
    languageOptions: {globals: {process: 'readonly', console: 'readonly'}},
  },
  {
    // A CommonJS fixture packed as an npm package (test/fixtures/mcp/sandbox-probe).
    files: ['test/fixtures/**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {require: 'readonly', fetch: 'readonly', AbortSignal: 'readonly'},
    },
    rules: {'@typescript-eslint/no-require-imports': 'off'},
  },
)
