#!/usr/bin/env node
// The command line for operators: argument handling and printing only; every sequence
// operation is the package's own (Rust) API. Each command is a `{ parse, run }` module
// in ./commands/: `parse` checks its arguments before anything connects, `run` connects
// (through the session it is given) and resolves with what to print.
'use strict';

const { parseArgs } = require('node:util');
const { version } = require('../package.json');
const { redacted, quote, UsageError, COMMON, COMMON_HELP, connectionOf, session, toJson } = require('../lib/cli.js');

const EXIT_ERROR = 1;
const EXIT_USAGE = 2;

/** The commands, in the order the help lists them. */
const COMMANDS = Object.fromEntries(['list', 'check', 'current', 'next', 'init', 'set', 'reset', 'drop', 'sync'].map((name) => [name, require(`./commands/${name}.js`)]));

function toolHelp() {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `mongodb-sequence ${version}: operate MongoDB sequences (counters).

Usage: mongodb-sequence <command> [arguments] [options]

Commands:
${lines.join('\n')}

${COMMON_HELP}

Give the connection string in MONGODB_URI: unlike --uri, it keeps a password out of
the process list (ps) and the shell history. Set it from a file or a secret store:
  export MONGODB_URI="$(cat ~/.config/shop-mongodb-uri)"

Example:
  mongodb-sequence list --db shop`;
}

function commandHelp(name) {
  const c = COMMANDS[name];
  const args = c.args.map((a) => ` <${a}>`).join('');
  const own = Object.entries(c.options).map(([k, o]) => `  --${k}${o.type === 'string' ? ' <value>' : ''}`);
  return `Usage: mongodb-sequence ${name}${args} [options]

${c.summary}
${own.length ? `\nOptions:\n${own.join('\n')}\n` : ''}
${COMMON_HELP}

Example:
  ${c.example}`;
}

/**
 * The command line `argv` read: `{ help }` to print, or `{ command, connection, input }`
 * (the command's module, where it works, and its own arguments, all checked).
 */
function parse(argv) {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') return { help: toolHelp() };
  if (name === '--version' || name === '-v') return { help: version };
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) throw new UsageError(`unknown command ${quote(name)}; run mongodb-sequence --help`);
  // parseArgs quotes an unknown option cut at its '=': a connection string given as one
  // (but for --uri=…) is refused here, quoted whole and so masked.
  const option = rest.find((arg) => arg.startsWith('-') && !arg.startsWith('--uri=') && redacted(arg) !== arg);
  if (option !== undefined) throw new UsageError(`unknown option ${quote(option)}; give the connection string in MONGODB_URI (or with --uri)`);
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: { ...COMMON, ...command.options }, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError(e.message);
  }
  if (parsed.values.help) return { help: commandHelp(name) };
  if (parsed.positionals.length !== command.args.length) {
    const expected = command.args.map((a) => `<${a}>`).join(' ') || 'no arguments';
    throw new UsageError(`${name} takes ${expected}; run mongodb-sequence ${name} --help`);
  }
  const connection = connectionOf(parsed.values);
  return { command, connection, input: command.parse(parsed) };
}

async function main(argv) {
  const wantsJson = argv.includes('--json');
  // A command may give its own exit code for a failure (check: 3, UNKNOWN, as monitoring
  // plugins do, since 1 and 2 are its WARNING and CRITICAL).
  const failureExitCode = Object.hasOwn(COMMANDS, argv[0] ?? '') ? COMMANDS[argv[0]].failureExitCode : undefined;
  // Every failure is printed here, masked: whatever put user input into the message.
  const fail = (code, text, exitCode) => {
    const message = redacted(text);
    if (wantsJson) process.stdout.write(`${toJson({ error: { code, message } })}\n`);
    else process.stderr.write(`error ${code}: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
    process.exitCode = failureExitCode ?? exitCode;
  };
  try {
    const parsed = parse(argv);
    if (parsed.help) {
      process.stdout.write(`${parsed.help}\n`);
      return;
    }
    const work = session(parsed.connection);
    let output;
    try {
      output = await parsed.command.run(parsed.input, work);
    } finally {
      await work.close();
    }
    // Masked as failures are: a counter name may be a connection string with a password.
    process.stdout.write(`${redacted(wantsJson ? toJson(output.json) : output.text)}\n`);
    if (output.exitCode) process.exitCode = output.exitCode;
  } catch (e) {
    if (e instanceof UsageError) return fail('USAGE', e.message, EXIT_USAGE);
    const code = typeof e?.code === 'string' ? e.code : 'INTERNAL';
    fail(code, String(e?.message ?? e), code === 'INVALID_ARGUMENT' ? EXIT_USAGE : EXIT_ERROR);
  }
}

main(process.argv.slice(2));
