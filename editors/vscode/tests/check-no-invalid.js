'use strict';
// Tokenizes valid svc programs with the grammar and fails if any token is scoped `invalid.*`:
// the grammar must never mark correct code as an error. With no arguments it reads the
// repository's examples and the compiler's corpus of good programs; `--dump FILE` prints every
// token's scopes instead (handy while editing the grammar).
//
//   node tests/check-no-invalid.js [--dump] [FILE_OR_FOLDER ...]

const fs = require('fs');
const path = require('path');
const oniguruma = require('vscode-oniguruma');
const textmate = require('vscode-textmate');

const EXTENSION = path.resolve(__dirname, '..');
const REPOSITORY = path.resolve(EXTENSION, '..', '..');
const DEFAULT_ROOTS = [
  path.join(REPOSITORY, 'examples'),
  path.join(REPOSITORY, 'tests', 'compiler', 'corpus', 'good'),
];

async function loadGrammar() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async () => {
      const file = path.join(EXTENSION, 'syntaxes', 'svc.tmLanguage.json');
      return textmate.parseRawGrammar(fs.readFileSync(file, 'utf8'), file);
    },
  });
  return registry.loadGrammar('source.svc');
}

function svcFiles(target) {
  if (!fs.statSync(target).isDirectory()) {
    return [target];
  }
  return fs.readdirSync(target).sort()
    .flatMap((name) => {
      const child = path.join(target, name);
      return fs.statSync(child).isDirectory() || name.endsWith('.svc') ? svcFiles(child) : [];
    });
}

function* tokens(grammar, text) {
  let stack = textmate.INITIAL;
  const lines = text.split(/\r?\n/);
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index];
    const result = grammar.tokenizeLine(line, stack);
    stack = result.ruleStack;
    for (const token of result.tokens) {
      yield { line: index + 1, column: token.startIndex + 1,
              text: line.slice(token.startIndex, token.endIndex), scopes: token.scopes };
    }
  }
}

async function main(argv) {
  const dump = argv[0] === '--dump';
  const targets = dump ? argv.slice(1) : argv;
  const files = (targets.length ? targets : DEFAULT_ROOTS).flatMap(svcFiles);
  if (files.length === 0) {
    console.error('check-no-invalid: no .svc files found');
    return 1;
  }
  const grammar = await loadGrammar();
  let problems = 0;
  for (const file of files) {
    for (const token of tokens(grammar, fs.readFileSync(file, 'utf8'))) {
      const where = `${path.relative(process.cwd(), file)}:${token.line}:${token.column}`;
      if (dump) {
        console.log(`${where} ${JSON.stringify(token.text)} ${token.scopes.slice(1).join(' ')}`);
      } else if (token.scopes.some((scope) => scope.startsWith('invalid.'))) {
        console.error(`${where}: ${JSON.stringify(token.text)} is scoped ${token.scopes.join(' ')}`);
        problems++;
      }
    }
  }
  if (!dump) {
    console.log(`check-no-invalid: ${files.length} files, ${problems} invalid tokens`);
  }
  return problems ? 1 : 0;
}

main(process.argv.slice(2)).then((status) => { process.exitCode = status; }, (err) => {
  console.error(err);
  process.exitCode = 2;
});
