'use strict';
// How the svc.server.path setting becomes a program: real files in a temporary folder.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { after, test } = require('node:test');
const { resolveServer, expandSetting, findProgram } = require('../../server-command');

const folders = [];
after(() => folders.forEach((folder) => fs.rmSync(folder, { recursive: true, force: true })));

function tempFolder() {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-vscode-'));
  folders.push(folder);
  return folder;
}

function writeProgram(folder, name, mode = 0o755) {
  const file = path.join(folder, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, '#!/bin/sh\n');
  fs.chmodSync(file, mode);
  return file;
}

test('a bare name is found on PATH and started with lsp', () => {
  const bin = tempFolder();
  const svcc = writeProgram(bin, 'svcc');
  const server = resolveServer({ setting: 'svcc', env: { PATH: `/nonexistent${path.delimiter}${bin}` },
                                 platform: 'linux' });
  assert.deepEqual(server, { command: svcc, args: ['lsp'] });
});

test('the default setting is svcc, and custom arguments replace lsp', () => {
  const bin = tempFolder();
  const svcc = writeProgram(bin, 'svcc');
  const server = resolveServer({ setting: '  ', args: ['lsp', '--verbose'], env: { PATH: bin },
                                 platform: 'linux' });
  assert.deepEqual(server, { command: svcc, args: ['lsp', '--verbose'] });
});

test('a name missing from PATH is an error that says what to do', () => {
  const server = resolveServer({ setting: 'svcc', env: { PATH: tempFolder() }, platform: 'linux' });
  assert.equal(server.command, undefined);
  assert.match(server.error, /"svcc" was not found on PATH/);
  assert.match(server.error, /svc\.server\.path/);
});

test('a file that is not executable, or a folder, is not a program', () => {
  const bin = tempFolder();
  writeProgram(bin, 'svcc', 0o644);
  fs.mkdirSync(path.join(bin, 'svcdir'));
  assert.equal(findProgram('svcc', { PATH: bin }, 'linux'), null);
  assert.equal(findProgram('svcdir', { PATH: bin }, 'linux'), null);
  const server = resolveServer({ setting: path.join(bin, 'svcc'), env: {}, platform: 'linux' });
  assert.match(server.error, /does not exist or is not an executable file/);
});

test('${workspaceFolder}, a relative path and ~ are expanded', () => {
  const project = tempFolder();
  const svcc = writeProgram(project, path.join('.venv', 'bin', 'svcc'));
  for (const setting of ['${workspaceFolder}/.venv/bin/svcc', '.venv/bin/svcc', './.venv/bin/svcc']) {
    const server = resolveServer({ setting, workspaceFolder: project, env: {}, platform: 'linux' });
    assert.deepEqual(server, { command: svcc, args: ['lsp'] }, setting);
  }
  assert.equal(expandSetting('~/bin/svcc', undefined, 'linux', '/home/ada'), '/home/ada/bin/svcc');
  assert.equal(expandSetting('svcc', project, 'linux'), 'svcc');
});
