'use strict';
// The svc extension. Highlighting and editing rules are declared in package.json; this file runs
// the language server, `svcc lsp` over stdio, for svc documents, and restarts it when its
// settings change or on the "svc: Restart Language Server" command.

const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');
const { resolveServer } = require('./server-command');

let client = null;
let output = null;
let watcher = null;
// Restarts run one after another: two quick settings changes must not start two servers.
let queue = Promise.resolve();

async function activate(context) {
  output = vscode.window.createOutputChannel('svc');
  // The server reads imported files from disk, so it hears about changes to them and to svc.toml.
  watcher = vscode.workspace.createFileSystemWatcher('**/{*.svc,svc.toml}');
  context.subscriptions.push(
    output,
    watcher,
    vscode.commands.registerCommand('svc.restartServer', restart),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('svc.server')) {
        restart();
      }
    }),
  );
  await restart();
}

function deactivate() {
  return stop();
}

function restart() {
  // A failure is reported (without waiting for the user to close the message), not left in
  // the queue, so the next restart still runs.
  queue = queue.then(stop).then(start).catch((err) => {
    showError(`svc: the language server: ${err && err.message ? err.message : err}`);
  });
  return queue;
}

async function start() {
  const settings = vscode.workspace.getConfiguration('svc');
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const server = resolveServer({
    setting: settings.get('server.path'),
    args: settings.get('server.args'),
    workspaceFolder: folder,
  });
  if (server.error) {
    showError(server.error);
    return;
  }
  const serverOptions = {
    command: server.command,
    args: server.args,
    transport: TransportKind.stdio,
    options: folder ? { cwd: folder } : {},
  };
  const clientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'svc' },
      { scheme: 'untitled', language: 'svc' },
    ],
    synchronize: { fileEvents: watcher },
    outputChannel: output,
  };
  const candidate = new LanguageClient('svc', 'svc language server', serverOptions, clientOptions);
  try {
    await candidate.start();
    client = candidate;
  } catch (err) {
    const commandLine = [server.command, ...server.args].join(' ');
    showError(`svc: "${commandLine}" did not start the language server ` +
      `(${err && err.message ? err.message : err}). Check that this svcc has the lsp ` +
      'command, or fix the "svc.server.path" and "svc.server.args" settings.');
    await candidate.dispose().catch(() => {});
  }
}

async function stop() {
  const running = client;
  client = null;
  if (running) {
    try {
      await running.stop();
    } catch (err) {
      output.appendLine(`svc: stopping the language server: ${err && err.message ? err.message : err}`);
    }
  }
}

async function showError(message) {
  output.appendLine(message);
  const choice = await vscode.window.showErrorMessage(message, 'Open Settings');
  if (choice) {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'svc.server');
  }
}

module.exports = { activate, deactivate };
