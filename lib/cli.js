'use strict';
// What the command line's commands share: usage errors, the options of every command
// (connection, database, counters collection and field, timeout), argument readers and
// output helpers. Each command is a `{ parse, run }` module under bin/commands/.

const readline = require('node:readline');
const seq = require('./native.js');
const json = require('./json.js');

/** Longest `--timeout`, in seconds (a day). */
const MAX_TIMEOUT_SECONDS = 86_400;
/** `--timeout` when none is given, in seconds. */
const DEFAULT_TIMEOUT_SECONDS = 10;

/**
 * `text` as every message of the command line shows it: the credentials of a connection
 * string in it masked (the package's own masking, as in its errors), so that one given
 * where a command, name or number belongs is never echoed with its password.
 */
const redacted = (text) => seq.redactConnectionStrings(String(text));

/**
 * The characters a terminal acts on instead of showing: C0 controls (a line feed or
 * carriage return in a name would forge a row; ESC starts sequences that set the title,
 * clear the screen, recolour), DEL, C1 controls (U+009B is an 8-bit CSI), and the bidi
 * overrides and isolates (U+202A-U+202E, U+2066-U+2069) that reorder what follows them.
 * A class body, for `printable`.
 */
const UNPRINTABLE = '\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069';

/** `c` as a `\uXXXX` escape. */
const escapeOf = (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` as the command line prints it: each character a terminal would act on (and each
 * of `also`, characters of a regular expression class) written as a `\uXXXX` escape, so
 * that a counter name or an echoed argument shows what it holds and cannot drive the
 * terminal. For text only: JSON output keeps the exact strings (see `toJson`).
 */
const printable = (text, also = '') => String(text).replace(new RegExp(`[${also}${UNPRINTABLE}]`, 'g'), escapeOf);

/**
 * The JSON text of `value` (BigInts as exact numbers) as the command line prints it: JSON
 * escapes C0 controls but writes DEL, C1 controls and bidi controls as they are; those are
 * written as `\uXXXX` escapes too, the same JSON, parsed to the same strings. (Outside
 * strings, JSON text holds none of them.)
 */
const toJson = (value) => json.toJson(value)?.replace(new RegExp(`[${UNPRINTABLE}]`, 'g'), escapeOf);

/** Command-line input quoted in a message: masked, then cut to 40 characters. */
const quote = (text) => JSON.stringify(redacted(text).slice(0, 40));

/** A mistake in the command line (exit code 2, code `USAGE`). */
class UsageError extends Error {}

/** A command that did not finish within `--timeout` (code `TIMEOUT`). */
class TimeoutError extends Error {}

/** The options every command takes (node:util parseArgs form). */
const COMMON = {
  uri: { type: 'string' },
  db: { type: 'string' },
  collection: { type: 'string' },
  field: { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  // -V as the Monitoring Plugins guidelines ask of a plugin (check), and so of every command.
  version: { type: 'boolean', short: 'V' },
};

const COMMON_HELP = `Options of every command:
  --uri <uri>          connection string; prefer the MONGODB_URI environment variable
                       (the default): a password given with --uri is visible to other
                       users in the process list (ps) and stays in the shell history
  --db <name>          database (default: the one in the connection string)
  --collection <name>  collection of the counters (default: counters)
  --field <name>       field of the counter value (default: sequence_value)
  --timeout <seconds>  bounds the whole command, connecting included: TIMEOUT after it
                       (default: 10; a write given up on may still be applied)
  --json               print JSON on stdout (errors as { "error": { "code", "message" } })
  -h, --help           this help; <command> --help for a command's
  -V, --version        the package's version
A scoped name is given as JSON: '{"type":"invoice","year":2026}'.`;

/** An integer argument as a BigInt (exact past 2^53), within the 64-bit range. */
function integer(label, text) {
  if (!/^-?\d+$/.test(String(text))) throw new UsageError(`${label} must be an integer; got ${quote(text)}`);
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
    // JSON.parse quotes the text, cut: a cut connection string could keep its password.
    const detail = redacted(text) === text ? e.message : `got ${quote(text)}`;
    throw new UsageError(`a scoped name must be a JSON object: ${detail}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError('a scoped name must be a JSON object');
  return parsed;
}

/** Seconds of `--timeout` (default 10) as milliseconds: more than 0, at most a day. */
function timeoutMs(text) {
  if (text === undefined) return DEFAULT_TIMEOUT_SECONDS * 1000;
  const seconds = Number(text);
  // 0 seconds would give up before any connection is made: it is refused, not read as "no limit".
  if (text.trim() === '' || !Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_TIMEOUT_SECONDS) {
    throw new UsageError(`--timeout must be a number of seconds greater than 0 and at most ${MAX_TIMEOUT_SECONDS}; got ${quote(text)}`);
  }
  return Math.ceil(seconds * 1000);
}

/**
 * Where a command works, from the options of every command: the connection string (from
 * --uri or MONGODB_URI), the database (--db, else the one the connection string names,
 * read by the same parser that connects), the timeout and the counters' options.
 */
function connectionOf(values) {
  const uri = values.uri ?? process.env.MONGODB_URI;
  if (!uri) throw new UsageError('no connection string: set MONGODB_URI (or pass --uri, which shows a password in ps and the shell history)');
  const db = values.db ?? seq.defaultDatabase(uri);
  if (!db) throw new UsageError('no database: pass --db or name it in the connection string');
  const options = { bigint: true };
  if (values.collection !== undefined) options.collection = values.collection;
  if (values.field !== undefined) options.field = values.field;
  return { uri, db, timeoutMs: timeoutMs(values.timeout), options };
}

/**
 * What a call given up on may still do when the server answers it after all, said after
 * a timeout past connecting (in the addon's own words for its calls that time out). A
 * read changes nothing and says nothing more.
 */
const LATE = {
  values: 'if the server applies it later, its values are left unused (a gap: no value is handed out twice)',
  write: 'the write may still be applied: read the counter before trying it again',
};

/**
 * A session on `connection`: `database()` connects on its first call (a command connects
 * only once its arguments are checked and confirmed) and starts the clock of --timeout
 * there, so that a question asked on a terminal is not counted; `close()` closes what was
 * opened within what is left of it. `stage` says what the command is waiting for, and
 * `late` what a call given up on may still do (one of `LATE`), for the message of a
 * timeout: the session sets `'connecting'`, a command its own later stages through
 * `working`. `expired` rejects with a `TimeoutError` once the time is up.
 */
function session(connection) {
  const { timeoutMs } = connection;
  // Connecting gives up a little before the deadline, so that an unreachable server is
  // reported with the driver's reason (CONNECTION), not as a bare TIMEOUT.
  const connectMs = Math.max(Math.floor(timeoutMs * 0.8), timeoutMs - 1000);
  let client;
  let timer;
  let expire;
  const expired = new Promise((_, reject) => {
    expire = reject;
  });
  // Only `withinTimeout` listens; a command that ends before the deadline never hears of it.
  expired.catch(() => {});
  return {
    ...connection,
    // Every call of the client is bounded by this too (its serverSelectionTimeoutMS).
    callTimeoutMs: connectMs,
    stage: 'connecting',
    late: undefined,
    expired,
    /** The error of a command that ran out of time at its current stage. */
    timedOut() {
      const late = this.stage === 'connecting' || this.late === undefined ? '' : `; ${this.late}`;
      return new TimeoutError(`no answer within --timeout (${timeoutMs / 1000} s) while ${this.stage}${late}`);
    },
    /** From now on the command waits for `stage`; a call given up on may still do `late`. */
    working(stage, late) {
      this.stage = stage;
      this.late = late;
    },
    async database() {
      if (!client) {
        this.startedAt ??= Date.now();
        timer ??= setTimeout(() => expire(this.timedOut()), timeoutMs);
        client = await seq.connect(connection.uri, { serverSelectionTimeoutMS: connectMs, connectTimeoutMS: connectMs });
        this.connectedAt = Date.now();
      }
      return client.db(connection.db);
    },
    async close() {
      clearTimeout(timer);
      if (!client) return;
      // A server that stopped answering would hold the driver's shutdown for its default
      // 5 s: past the deadline, the shutdown goes on in the background and the command
      // leaves.
      const left = this.startedAt === undefined ? timeoutMs : this.startedAt + timeoutMs - Date.now();
      await client.close({ timeoutMS: Math.max(1, Math.ceil(left)) });
    },
  };
}

/**
 * `work` bounded by the session's `--timeout`: resolves or rejects as `work` does, or
 * rejects with a `TimeoutError` naming the session's stage once the time is up (the work
 * goes on, its outcome ignored: the caller leaves without waiting for it).
 */
function withinTimeout(work, session) {
  // A call after connecting is bounded by the client's own call timeout, a little shorter
  // than --timeout: when that bound is what ended it, the command timed out at its stage
  // (whichever of the two timers fires first), not the connection.
  const bounded = work.catch((error) => {
    // Measured from when connecting ended (a call's bound starts with the call).
    const callBound = session.connectedAt !== undefined && Date.now() - session.connectedAt >= session.callTimeoutMs;
    throw error?.code === 'CONNECTION' && session.stage !== 'connecting' && callBound ? session.timedOut() : error;
  });
  bounded.catch(() => {});
  return Promise.race([bounded, session.expired]);
}

/** A number as printed: BigInts as their exact digits. */
const show = (v) => (typeof v === 'bigint' ? v.toString() : typeof v === 'string' ? v : JSON.stringify(v));
/**
 * `value` with every string in it (keys too) masked on its own: masking a whole output at
 * once would take everything up to the last `@` after a connection string with it.
 */
const masked = (value) => {
  if (typeof value === 'string') return redacted(value);
  if (Array.isArray(value)) return value.map(masked);
  if (value && typeof value === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(value))) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redacted(k), masked(v)]));
  }
  return value;
};
/**
 * A sequence name as text, masked: a string as it is, a scoped name as its JSON. Raw, for
 * formats that escape in their own way; text output prints `shownName`.
 */
const nameText = (name) => (typeof name === 'string' ? redacted(name) : json.toJson(masked(name)));
/** A sequence name as text output prints it: masked, terminal controls escaped. */
const shownName = (name) => printable(nameText(name));

/** `rows` under `headers` in aligned columns (those in `rightAligned` to the right). */
function table(rows, headers, rightAligned) {
  const cells = [headers, ...rows];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (rightAligned.includes(i) ? c.padStart(widths[i]) : c.padEnd(widths[i])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** Asks `question` on the terminal; resolves with whether the answer is yes. */
async function confirm(question) {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  const answer = await new Promise((resolve) => {
    // Ctrl-D (the input ended without an answer) is a no, as Enter alone is.
    rl.once('close', () => resolve(null));
    // Ctrl-C: interrupted, as anywhere else in the tool (without this listener readline
    // would only close, and the tool end as if nothing had happened).
    rl.once('SIGINT', () => {
      process.stderr.write('\n');
      rl.close();
      process.kill(process.pid, 'SIGINT');
    });
    rl.question(question, resolve);
  });
  if (answer === null) process.stderr.write('\n');
  rl.close();
  return /^y(es)?$/i.test((answer ?? '').trim());
}

module.exports = {
  redacted,
  masked,
  quote,
  UsageError,
  TimeoutError,
  LATE,
  withinTimeout,
  COMMON,
  COMMON_HELP,
  integer,
  sequenceName,
  timeoutMs,
  connectionOf,
  session,
  show,
  printable,
  nameText,
  shownName,
  table,
  confirm,
  toJson,
};
