#!/usr/bin/env node
// The command line for operators: argument handling and printing only; every sequence
// operation is the package's own (Rust) API.
'use strict';

const { parseArgs } = require('node:util');
const readline = require('node:readline');
const seq = require('../index.js');
const { version } = require('../package.json');

const EXIT_ERROR = 1;
const EXIT_USAGE = 2;

const COMMON = {
  uri: { type: 'string' },
  db: { type: 'string' },
  collection: { type: 'string' },
  field: { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

const COMMANDS = {
  list: {
    args: [],
    options: {},
    summary: 'List the counters: name, value, step, min, max, cycle.',
    example: 'MONGODB_URI=mongodb://localhost:27017/shop mongodb-sequence list',
  },
  current: {
    args: ['name'],
    options: {},
    summary: 'Print the last value handed out, without taking one.',
    example: 'mongodb-sequence current invoices',
  },
  next: {
    args: ['name'],
    options: { count: { type: 'string' }, upsert: { type: 'boolean' } },
    summary: 'Take the next value (or --count N values: up to 1000 printed one per line, more as a range); --upsert creates a missing counter.',
    example: `mongodb-sequence next '{"type":"invoice","year":2026}' --upsert`,
  },
  init: {
    args: ['name'],
    options: {
      start: { type: 'string' },
      step: { type: 'string' },
      min: { type: 'string' },
      max: { type: 'string' },
      cycle: { type: 'boolean' },
    },
    summary: 'Create a counter (never overwrites one): first value --start, and --step, --min, --max, --cycle.',
    example: 'mongodb-sequence init tickets --start 1000 --max 9999 --cycle',
  },
  set: {
    args: ['name', 'value'],
    options: {},
    summary: "Set the counter so that the next value follows <value> (like PostgreSQL's setval).",
    example: 'mongodb-sequence set orders 50000',
  },
  reset: {
    args: ['name'],
    options: {},
    summary: 'Put the counter back so that the next value is its start.',
    example: 'mongodb-sequence reset tickets',
  },
  drop: {
    args: ['name'],
    options: { yes: { type: 'boolean', short: 'y' } },
    summary: 'Delete the counter. Asks for confirmation on a terminal unless --yes; elsewhere requires --yes.',
    example: 'mongodb-sequence drop old-counter --yes',
  },
  sync: {
    args: ['name'],
    options: { from: { type: 'string' } },
    summary: 'Move the counter past every value of --from <collection>.<field> (a dotted path allowed; never moves it back).',
    example: 'mongodb-sequence sync orders --from orders.orderNo',
  },
};

const COMMON_HELP = `Options of every command:
  --uri <uri>          connection string; prefer the MONGODB_URI environment variable
                       (the default): a password given with --uri is visible to other
                       users in the process list (ps) and stays in the shell history
  --db <name>          database (default: the one in the connection string)
  --collection <name>  collection of the counters (default: counters)
  --field <name>       field of the counter value (default: sequence_value)
  --timeout <seconds>  give up connecting after this long, with CONNECTION (default: 10)
  --json               print JSON on stdout (errors as { "error": { "code", "message" } })
  -h, --help           this help; <command> --help for a command's
A scoped name is given as JSON: '{"type":"invoice","year":2026}'.`;

class UsageError extends Error {}

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

/** An integer argument as a BigInt (exact past 2^53), within the 64-bit range. */
function integer(label, text) {
  if (!/^-?\d+$/.test(String(text))) throw new UsageError(`${label} must be an integer; got ${JSON.stringify(String(text).slice(0, 40))}`);
  const value = BigInt(text);
  if (value < -(2n ** 63n) || value >= 2n ** 63n) throw new UsageError(`${label} is outside the 64-bit range`);
  return value;
}

/** A sequence name: a string, or a scoped name as a JSON object. */
function sequenceName(text) {
  if (!text.trimStart().startsWith('{')) return text;
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`a scoped name must be a JSON object: ${e.message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError('a scoped name must be a JSON object');
  return parsed;
}

/**
 * The database named in a connection string's path, if any. In a valid string the user
 * information ends at the last '@' before the first '/' or '?'; but a password may hold
 * an unescaped '/', '?' or '@', and a query an '@' (appName=ops@example.com). The path is
 * read both ways (user information up to that '@', and up to the last '@' of the whole
 * string, which no part of a password follows) and used only when both readings agree:
 * otherwise no database is guessed (the user passes --db), so that neither a piece of a
 * password nor a piece of the query is taken for a database name.
 */
function databaseOf(uri) {
  const afterScheme = uri.split('://')[1] ?? '';
  const pathOf = (rest) => {
    const slash = rest.search(/[/?]/);
    if (slash < 0 || rest[slash] !== '/') return undefined;
    return rest.slice(slash + 1).split('?')[0];
  };
  const authorityEnd = afterScheme.search(/[/?]/);
  const authority = authorityEnd < 0 ? afterScheme : afterScheme.slice(0, authorityEnd);
  const byAuthority = pathOf(afterScheme.slice(authority.lastIndexOf('@') + 1));
  const byLastAt = pathOf(afterScheme.slice(afterScheme.lastIndexOf('@') + 1));
  if (byAuthority === undefined || byAuthority !== byLastAt) return undefined;
  try {
    return decodeURIComponent(byAuthority) || undefined;
  } catch {
    return undefined;
  }
}

/** Numbers as they are: BigInts as their exact digits, in text and in JSON. */
const show = (v) => (typeof v === 'bigint' ? v.toString() : typeof v === 'string' ? v : JSON.stringify(v));
function toJson(value) {
  const marked = JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `@@big:${v}` : v));
  return marked.replace(/"@@big:(-?\d+)"/g, '$1');
}
const nameText = (name) => (typeof name === 'string' ? name : toJson(name));

function table(rows, headers, rightAligned) {
  const cells = [headers, ...rows];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  return cells
    .map((r) => r.map((c, i) => (rightAligned.includes(i) ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd())
    .join('\n');
}

async function confirm(question) {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  const answer = await new Promise((resolve) => rl.question(question, resolve));
  rl.close();
  return /^y(es)?$/i.test(answer.trim());
}

function parse(argv) {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h') return { help: toolHelp() };
  if (command === '--version' || command === '-v') return { help: version };
  const spec = COMMANDS[command];
  if (!spec) throw new UsageError(`unknown command ${JSON.stringify(command.slice(0, 40))}; run mongodb-sequence --help`);
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: { ...COMMON, ...spec.options }, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError(e.message);
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: commandHelp(command) };
  if (positionals.length !== spec.args.length) {
    const expected = spec.args.map((a) => `<${a}>`).join(' ') || 'no arguments';
    throw new UsageError(`${command} takes ${expected}; run mongodb-sequence ${command} --help`);
  }
  const uri = values.uri ?? process.env.MONGODB_URI;
  if (!uri) throw new UsageError('no connection string: set MONGODB_URI (or pass --uri, which shows a password in ps and the shell history)');
  const db = values.db ?? databaseOf(uri);
  if (!db) throw new UsageError('no database: pass --db or name it in the connection string');
  const seconds = values.timeout === undefined ? 10 : Number(values.timeout);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 86_400) throw new UsageError('--timeout must be a number of seconds from 0 to 86400');
  const options = { bigint: true };
  if (values.collection !== undefined) options.collection = values.collection;
  if (values.field !== undefined) options.field = values.field;
  return { command, values, positionals, uri, db, timeoutMs: Math.ceil(seconds * 1000), options };
}

/** Runs a parsed command: resolves with `{ text, json }` to print. */
async function run({ command, values, positionals, uri, db, timeoutMs, options }) {
  // Arguments are checked before connecting.
  const name = positionals.length ? sequenceName(positionals[0]) : undefined;
  const count = values.count === undefined ? 1n : integer('--count', values.count);
  if (count < 1n || count > 2n ** 31n - 1n) throw new UsageError('--count must be from 1 to 2147483647');
  const setValue = command === 'set' ? integer('<value>', positionals[1]) : undefined;
  const init = {};
  for (const [flag, key] of [['start', 'start'], ['step', 'step'], ['min', 'minValue'], ['max', 'maxValue']]) {
    if (values[flag] !== undefined) init[key] = integer(`--${flag}`, values[flag]);
  }
  if (values.cycle) init.cycle = true;
  let source;
  if (command === 'sync') {
    const from = values.from ?? '';
    const dot = from.indexOf('.');
    if (dot <= 0 || dot === from.length - 1) throw new UsageError('sync needs --from <collection>.<field>');
    source = [from.slice(0, dot), from.slice(dot + 1)];
  }
  if (command === 'drop' && !values.yes) {
    if (!process.stdin.isTTY) throw new UsageError('drop needs --yes when not run on a terminal');
    const where = `${db}.${options.collection ?? 'counters'}`;
    if (!(await confirm(`Drop sequence ${nameText(name)} from ${where}? [y/N] `))) {
      return { text: 'cancelled', json: { name, dropped: false, cancelled: true } };
    }
  }

  const client = await seq.connect(uri, { serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs });
  try {
    const database = client.db(db);
    const handle = name === undefined ? undefined : seq.sequence(database, name, { ...options, upsert: Boolean(values.upsert) });
    switch (command) {
      case 'list': {
        const all = await seq.listSequences(database, options);
        const rows = all.map((s) => [nameText(s.name), show(s.value), show(s.step ?? 1), s.minValue === undefined ? '-' : show(s.minValue), s.maxValue === undefined ? '-' : show(s.maxValue), s.cycle ? 'yes' : 'no']);
        const text = rows.length ? table(rows, ['NAME', 'VALUE', 'STEP', 'MIN', 'MAX', 'CYCLE'], [1, 2, 3, 4]) : '(no sequences)';
        return { text, json: all };
      }
      case 'current': {
        const value = await handle.current();
        return { text: show(value), json: { name, value } };
      }
      case 'next': {
        if (count === 1n) {
          const value = await handle.next();
          return { text: show(value), json: { name, value } };
        }
        if (count <= 1000n) {
          const batch = await handle.nextBatch(Number(count));
          return { text: batch.map(show).join('\n'), json: { name, values: batch } };
        }
        const range = await handle.nextRange(Number(count));
        return { text: `${show(range.first)}..${show(range.last)} (${range.count} values, step ${range.step})`, json: { name, ...range } };
      }
      case 'init': {
        const created = await handle.init(init);
        return { text: created ? `created ${nameText(name)}` : `${nameText(name)} exists already (unchanged)`, json: { name, created } };
      }
      case 'set': {
        await handle.set(setValue);
        return { text: `${nameText(name)} set to ${setValue}`, json: { name, value: setValue } };
      }
      case 'reset': {
        const start = await handle.reset();
        return { text: `${nameText(name)} reset; next value ${show(start)}`, json: { name, next: start } };
      }
      case 'drop': {
        const dropped = await handle.drop();
        return { text: dropped ? `dropped ${nameText(name)}` : `${nameText(name)} did not exist`, json: { name, dropped } };
      }
      case 'sync': {
        const value = await seq.syncToMax(database, source[0], source[1], name, options);
        return { text: show(value), json: { name, value } };
      }
      default:
        throw new UsageError(`unknown command ${command}`);
    }
  } finally {
    await client.close();
  }
}

async function main(argv) {
  const wantsJson = argv.includes('--json');
  const fail = (code, message, exitCode) => {
    if (wantsJson) process.stdout.write(`${toJson({ error: { code, message } })}\n`);
    else process.stderr.write(`error ${code}: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
    process.exitCode = exitCode;
  };
  let parsed;
  try {
    parsed = parse(argv);
    if (parsed.help) {
      process.stdout.write(`${parsed.help}\n`);
      return;
    }
    const { text, json } = await run(parsed);
    process.stdout.write(`${wantsJson ? toJson(json) : text}\n`);
  } catch (e) {
    if (e instanceof UsageError) return fail('USAGE', e.message, EXIT_USAGE);
    const code = typeof e?.code === 'string' ? e.code : 'INTERNAL';
    const usage = code === 'INVALID_ARGUMENT';
    fail(code, String(e?.message ?? e), usage ? EXIT_USAGE : EXIT_ERROR);
  }
}

main(process.argv.slice(2));
