'use strict';
// Which program runs the svc language server. The settings name it ("svcc", a path, maybe with
// ~ or ${workspaceFolder}); this module turns that into a program on disk, or into a message a
// user can act on when there is none. It does not use the `vscode` module, so plain Node tests it
// (tests/unit).

const fs = require('fs');
const os = require('os');
const path = require('path');

const DEFAULT_COMMAND = 'svcc';
const DEFAULT_ARGS = ['lsp'];

/**
 * The command and arguments that start the server, or `{ error }` saying why there are none.
 * A bare name is looked up on PATH here, before spawning, because a failed spawn only tells the
 * user "ENOENT" in an output channel they may never open.
 */
function resolveServer({ setting, args, workspaceFolder, env = process.env,
                         platform = process.platform, home = os.homedir() } = {}) {
  const command = expandSetting(setting, workspaceFolder, platform, home);
  const program = findProgram(command, env, platform);
  if (program === null) {
    return { error: notFoundMessage(command, platform) };
  }
  const serverArgs = Array.isArray(args) && args.length ? args.map(String) : DEFAULT_ARGS;
  return { command: program, args: serverArgs };
}

/**
 * The setting with `${workspaceFolder}` and a leading `~` expanded; a relative path (one with a
 * directory part) is taken from the workspace folder, as `.venv/bin/svcc` would be meant.
 */
function expandSetting(setting, workspaceFolder, platform = process.platform, home = os.homedir()) {
  const api = pathApi(platform);
  let command = typeof setting === 'string' && setting.trim() ? setting.trim() : DEFAULT_COMMAND;
  if (workspaceFolder) {
    command = command.split('${workspaceFolder}').join(workspaceFolder);
  }
  if (command === '~' || /^~[\\/]/.test(command)) {
    command = api.join(home, command.slice(1));
  }
  if (hasDirectory(command, platform) && !api.isAbsolute(command) && workspaceFolder) {
    command = api.resolve(workspaceFolder, command);
  }
  return command;
}

/** The full path of an executable `command` (searched on PATH if it is a bare name), or null. */
function findProgram(command, env = process.env, platform = process.platform) {
  const api = pathApi(platform);
  const candidates = hasDirectory(command, platform)
    ? [command]
    : (env.PATH || env.Path || '').split(api.delimiter).filter(Boolean)
      .map((dir) => api.join(dir, command));
  // Windows finds "svcc" as svcc.exe or svcc.cmd (a pip or pipx launcher).
  const suffixes = platform === 'win32'
    ? ['', ...(env.PATHEXT || '.COM;.EXE;.BAT;.CMD').split(';').filter(Boolean)]
    : [''];
  for (const candidate of candidates) {
    for (const suffix of suffixes) {
      if (isExecutableFile(candidate + suffix, platform)) {
        return candidate + suffix;
      }
    }
  }
  return null;
}

function notFoundMessage(command, platform = process.platform) {
  if (hasDirectory(command, platform)) {
    return `svc: the language server program "${command}" does not exist or is not an ` +
      'executable file. Fix the "svc.server.path" setting.';
  }
  return `svc: "${command}" was not found on PATH, so the svc language server cannot start. ` +
    'Install svc so that svcc is on PATH, or set "svc.server.path" to the svcc program ' +
    '(for example ${workspaceFolder}/.venv/bin/svcc).';
}

function hasDirectory(command, platform) {
  return command.includes('/') || (platform === 'win32' && command.includes('\\'));
}

function isExecutableFile(file, platform) {
  try {
    if (!fs.statSync(file).isFile()) {
      return false;
    }
    if (platform !== 'win32') {
      fs.accessSync(file, fs.constants.X_OK);
    }
    return true;
  } catch {
    return false;
  }
}

function pathApi(platform) {
  return platform === 'win32' ? path.win32 : path.posix;
}

module.exports = { resolveServer, expandSetting, findProgram, notFoundMessage };
