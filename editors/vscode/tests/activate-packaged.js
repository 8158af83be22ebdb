'use strict';
// Loads the extension as packed in the .vsix (unzipped to EXTENSION_DIR) with a stand-in for the
// `vscode` module, activates it with a svc.server.path that names no program, and checks that
// the user gets the error message (and no exception). This proves the package holds everything
// extension.js requires, vscode-languageclient included, without starting VS Code.
//
//   node tests/activate-packaged.js EXTENSION_DIR

const assert = require('node:assert/strict');
const Module = require('node:module');
const path = require('node:path');

function fakeVscode(settings, shown) {
  const disposable = { dispose() {} };
  const api = {
    window: {
      createOutputChannel: () => ({ appendLine() {}, dispose() {} }),
      showErrorMessage: async (message) => { shown.push(message); return undefined; },
    },
    workspace: {
      workspaceFolders: undefined,
      getConfiguration: (section) => ({ get: (key) => settings[`${section}.${key}`] }),
      createFileSystemWatcher: () => disposable,
      onDidChangeConfiguration: () => disposable,
    },
    commands: { registerCommand: () => disposable, executeCommand: async () => undefined },
  };
  // vscode-languageclient refers to many other vscode classes and enums while it loads; any
  // name not given above is an empty class, which is enough to load it.
  return new Proxy(api, { get: (target, name) => (name in target ? target[name] : class {}) });
}

async function main(extensionDir) {
  const shown = [];
  const settings = { 'svc.server.path': '/nonexistent/svcc', 'svc.server.args': ['lsp'] };
  const vscode = fakeVscode(settings, shown);
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    return request === 'vscode' ? 'vscode' : resolve.call(this, request, ...rest);
  };
  require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: vscode };

  const extension = require(path.resolve(extensionDir, 'extension.js'));
  const subscriptions = [];
  await extension.activate({ subscriptions });
  assert.equal(shown.length, 1, `expected one error message, got ${JSON.stringify(shown)}`);
  assert.match(shown[0], /"\/nonexistent\/svcc" does not exist or is not an executable file/);
  assert.ok(subscriptions.length >= 3, 'activate registers its command and listeners');
  await extension.deactivate();
  console.log(`activate-packaged: ok (${shown[0]})`);
}

main(process.argv[2]).catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
