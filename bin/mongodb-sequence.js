#!/usr/bin/env node
// The command line for operators: argument handling and printing only; every sequence
// operation is the package's own (Rust) API. Each command is a `{ parse, run }` module
// in ./commands/: `parse` checks its arguments before anything connects, `run` connects
// (through the session it is given) and resolves with what to print.
'use strict';

const { parseArgs } = require('node:util');
const { version } = require('../package.json');
const { redacted, masked, quote, printable, UsageError, TimeoutError, withinTimeout, COMMON, COMMON_HELP, connectionOf, session, toJson } = require('../lib/cli.js');

const EXIT_ERROR = 1;
const EXIT_USAGE = 2;

// A reader that stops reading (`mongodb-sequence list | head`) ends the output: the tool
// leaves quietly, as `ls | head` does, instead of dying on an unhandled EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e) => {
    if (e?.code !== 'EPIPE') throw e;
    process.exit();
  });
}

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

/** `text` in lines of at most 88 characters, the ones after the first indented by `indent`. */
function wrapped(text, indent) {
  const lines = [''];
  for (const word of text.split(' ')) {
    const line = lines[lines.length - 1];
    if (line && indent + line.length + 1 + word.length > 88) lines.push(word);
    else lines[lines.length - 1] = line ? `${line} ${word}` : word;
  }
  return lines.join(`\n${' '.repeat(indent)}`);
}

function commandHelp(name) {
  const c = COMMANDS[name];
  const args = c.args.map((a) => ` <${a}>`).join('');
  // An option as written (`-w, --warning <percent>`), with what the command says of it.
  const written = Object.entries(c.options).map(([k, o]) => {
    const [value, text] = c.optionHelp?.[k] ?? [o.type === 'string' ? '<value>' : '', ''];
    return [`${o.short ? `-${o.short}, ` : ''}--${k}${value ? ` ${value}` : ''}`, text];
  });
  const width = Math.max(0, ...written.map(([w]) => w.length));
  const own = written.map(([w, text]) => `  ${text ? `${w.padEnd(width)}  ${wrapped(text, width + 4)}` : w}`);
  return `Usage: mongodb-sequence ${name}${args} [options]

${c.summary}
${own.length ? `\nOptions:\n${own.join('\n')}\n` : ''}
${COMMON_HELP}

Example:
  ${c.example}`;
}

/**
 * The command line `argv` read: `{ help }` to print (a help or the version), or
 * `{ command, connection, input }` (the command's module, where it works, and its own
 * arguments, all checked).
 */
function parse(argv) {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') return { help: toolHelp() };
  if (name === '--version' || name === '-v' || name === '-V') return { help: version };
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
  if (parsed.values.version) return { help: version };
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
  // plugins do, since 1 and 2 are its WARNING and CRITICAL), and its own way to print one.
  const own = Object.hasOwn(COMMANDS, argv[0] ?? '') ? COMMANDS[argv[0]] : undefined;
  // Every failure is printed here, masked, and as text with terminal controls escaped:
  // whatever put user input or a stored name into the message (the addon's errors quote
  // the name as it is), it prints on one line and cannot drive the terminal.
  const fail = (code, text, exitCode) => {
    const message = redacted(text);
    const printed = own?.failure
      ? own.failure(code, message, argv)
      : wantsJson
        ? { stdout: toJson({ error: { code, message } }) }
        : { stderr: `error ${code}: ${printable(message)}` };
    if (printed.stdout !== undefined) process.stdout.write(`${redacted(printed.stdout)}\n`);
    if (printed.stderr !== undefined) process.stderr.write(`${redacted(printed.stderr)}\n`);
    process.exitCode = own?.failureExitCode ?? exitCode;
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
      output = await withinTimeout(parsed.command.run(parsed.input, work), work);
    } catch (e) {
      if (e instanceof TimeoutError) {
        // The server may never answer (a frozen one): say so now and leave, waiting
        // neither for the work nor for the client to close.
        fail('TIMEOUT', e.message, EXIT_ERROR);
        const flushed = (stream) => new Promise((resolve) => stream.write('', resolve));
        await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
        process.exit();
      }
      await work.close();
      throw e;
    }
    // A counter name may be a connection string with a password: texts mask each name
    // (`nameText`), JSON every string on its own.
    process.stdout.write(`${wantsJson ? toJson(masked(output.json)) : output.text}\n`);
    if (output.exitCode) process.exitCode = output.exitCode;
    // After the answer: a server that stops answering now delays only the exit, and that
    // no later than the deadline.
    await work.close();
  } catch (e) {
    if (e instanceof UsageError) return fail('USAGE', e.message, EXIT_USAGE);
    const code = typeof e?.code === 'string' ? e.code : 'INTERNAL';
    fail(code, String(e?.message ?? e), code === 'INVALID_ARGUMENT' ? EXIT_USAGE : EXIT_ERROR);
  }
}

main(process.argv.slice(2));
