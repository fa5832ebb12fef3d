// Runs or checks one documentation code block (see doc-blocks.mjs for how blocks and
// their annotations are found). The rules, which the doc test states too:
//
// - Every block runs in a fresh app folder whose node_modules links this package (by
//   its name), mongodb and mongoose, as an application installs them, and in a fresh
//   process (so a fresh module).
// - The documented server `mongodb://localhost:27017` becomes the test server of the run,
//   and every database name a block uses (`.db('name')`, or the path of such a URI) gets
//   a suffix unique to the block: each block has fresh databases.
// - js / javascript / ts / typescript blocks: the annotations' `setup` lines, the block
//   and the `teardown` lines make one module (CommonJS wrapped in an async function, or
//   ESM when the block has `import` lines). A result comment is checked against the
//   value of the statement it ends: `// → <value>` always; `// <value>` when the comment
//   starts with a value (a number, string, array, object, true, false, null). In a value,
//   `a..b` stands for the integers a to b and a trailing `, ...` or `, …` in an array for
//   "and more elements". The rest of a comment after the value is prose. A statement
//   `const x = …; // → v` checks `x`. A comment that was never reached fails the block.
//   ts blocks are type-checked with the project's tsc (--strict) first.
// - console blocks are shell sessions: each `$ ` line runs in bash (one session, so
//   `export` carries over) with the package's bin on PATH, stderr into stdout, and the
//   whole transcript must equal the block byte for byte.
// - sh blocks are checked, not run: `npm install <name>` must name this package,
//   `npm run <script>` / `npm test` must name a script of package.json, and `npm
//   install` must have a package.json to install from. Any other command fails the
//   block unless it is annotated `not run: <reason>`.
// - text blocks (diagrams, trees) are checked, not run: every file or folder path they
//   name (`src/engine/`, `bin/x.js`, `index.js`) must exist in the repository.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const CHECK = require.resolve('./doc-check.cjs');
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;

export const JS_LANGS = new Set(['js', 'javascript', 'cjs', 'mjs']);
export const TS_LANGS = new Set(['ts', 'typescript']);
export const SESSION_LANGS = new Set(['console', 'shell-session']);
export const SH_LANGS = new Set(['sh', 'bash', 'shell']);
export const TEXT_LANGS = new Set(['text', 'txt']);

/** How the harness treats a block: 'run' (js, ts, console), 'check' (sh) or 'not run'. */
export function classify(block) {
  if (block.notRun) return 'not run';
  if (JS_LANGS.has(block.lang) || TS_LANGS.has(block.lang) || SESSION_LANGS.has(block.lang)) return 'run';
  if (SH_LANGS.has(block.lang) || TEXT_LANGS.has(block.lang)) return 'check';
  return 'unknown';
}

// ---------------------------------------------------------------- the server and databases

/** `uri` with its database path set to `db` (query kept). */
export function withDatabase(uri, db) {
  const m = /^(mongodb(?:\+srv)?:\/\/[^/?]*)(?:\/[^?]*)?(\?.*)?$/.exec(uri);
  if (!m) throw new Error('unrecognised test server URI');
  return `${m[1]}/${db ?? ''}${m[2] ?? ''}`;
}

/**
 * Rewrites a block's text for the test server: the documented URI becomes `serverUri`,
 * and database names get `suffix`. Returns the text and the database names used.
 */
export function rewriteForServer(text, serverUri, suffix) {
  const databases = new Set();
  const fresh = (name) => {
    const renamed = `${name}${suffix}`;
    databases.add(renamed);
    return renamed;
  };
  const out = text
    .replace(/mongodb:\/\/localhost:27017(?:\/([A-Za-z0-9_-]+))?\/?/g, (_, db) => withDatabase(serverUri, db ? fresh(db) : undefined))
    .replace(/\.db\((['"])([A-Za-z0-9_-]+)\1\)/g, (_, q, db) => `.db(${q}${fresh(db)}${q})`);
  return { text: out, databases: [...databases] };
}

/** An app folder: node_modules with this package (as `name`), mongodb, mongoose, @types and @opentelemetry. */
export function makeApp(root, name) {
  const dir = mkdtempSync(join(tmpdir(), 'mseq-doctest-'));
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(root, join(dir, 'node_modules', name), 'dir');
  // @opentelemetry: the SDK the OpenTelemetry example of docs/opentelemetry.md runs against.
  for (const dep of ['mongodb', 'mongoose', '@types', '@opentelemetry']) symlinkSync(join(root, 'node_modules', dep), join(dir, 'node_modules', dep), 'dir');
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  for (const [bin, path] of Object.entries(pkg.bin ?? {})) symlinkSync(join(root, path), join(dir, 'node_modules', '.bin', bin));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'doctest-app', private: true }));
  return dir;
}

// ---------------------------------------------------------------- result comments

// Splits each line into code and trailing `//` comment, following string and template
// literals across lines.
function splitComments(lines) {
  let quote = null;
  return lines.map((line) => {
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (quote) {
        if (c === '\\') i++;
        else if (c === quote) quote = null;
      } else if (c === '"' || c === "'" || c === '`') quote = c;
      else if (c === '/' && line[i + 1] === '/') return { code: line.slice(0, i), comment: line.slice(i + 2) };
      else if (c === '/' && line[i + 1] === '*') {
        const end = line.indexOf('*/', i + 2);
        if (end < 0) break;
        i = end + 1;
      }
    }
    if (quote && quote !== '`') quote = null;
    return { code: line, comment: null };
  });
}

// Whether `source` is a valid body of an async function (JavaScript, or TypeScript
// when `typescript` is set, checked with the TypeScript parser).
function parses(source, typescript = false) {
  if (typescript) {
    const ts = require('typescript');
    const out = ts.transpileModule(`(async () => {\n${source}\n});`, { reportDiagnostics: true, compilerOptions: { target: ts.ScriptTarget.ES2022 } });
    return out.diagnostics.length === 0;
  }
  try {
    new AsyncFunction(source);
    return true;
  } catch {
    return false;
  }
}

// The value expression at the start of a result comment, as JavaScript, or null.
function valueOf(text) {
  const prepared = (s) =>
    s
      .replace(/(-?\d+)\s*\.\.\s*(-?\d+)/g, '...__doctest.range($1, $2)')
      .replace(/,\s*(?:\.\.\.|…)\s*\]/g, ', __doctest.MORE]')
      .replace(/(?<![\w.$])(\d{16,})(?![\w.])/g, (d) => (Number.isSafeInteger(Number(d)) ? d : `${d}n`));
  for (let end = text.length; end > 0; end--) {
    const candidate = text.slice(0, end).trim();
    if (!candidate || /[,;:]$/.test(candidate)) continue;
    const js = prepared(candidate);
    if (parses(`return (${js}\n);`)) return { source: candidate, js };
  }
  return null;
}

const VALUE_START = /^(?:-?\d|\[|\{|'|"|(?:true|false|null)(?![\w$]))/;

/**
 * The result comments of a block's lines: `[{ index, expected, source }]`, `index` being
 * the 0-based line. Throws on a `→` comment whose value does not parse.
 */
export function resultComments(lines, where) {
  const found = [];
  splitComments(lines).forEach(({ code, comment }, index) => {
    if (comment === null || !code.trim()) return;
    const text = comment.trim();
    let value;
    if (text.startsWith('→')) {
      value = valueOf(text.slice(1).trim());
      if (!value) throw new Error(`${where(index)}: the value after → does not parse: ${text}`);
    } else if (VALUE_START.test(text)) {
      value = valueOf(text);
    }
    if (value) found.push({ index, code, expected: value });
  });
  return found;
}

/**
 * Rewrites `lines` (the block) so that each result comment is checked; keeps the line
 * count. `where(i)` names line i for messages.
 */
export function instrument(lines, where, { typescript = false } = {}) {
  const parts = splitComments(lines);
  const out = parts.map((p) => p.code);
  const comments = resultComments(lines, where);
  let floor = 0;
  for (const { index, expected } of comments) {
    let start = index;
    while (start > floor && !parses(out.slice(start, index + 1).join('\n'), typescript)) start--;
    const span = out.slice(start, index + 1).join('\n');
    if (!parses(span, typescript)) throw new Error(`${where(index)}: no complete statement ends on the line of this result comment`);
    const loc = JSON.stringify(where(index));
    const declared = /^\s*(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=[^=>]/.exec(span);
    if (declared) {
      out[index] = `${out[index]}; __doctest.check(${loc}, ${JSON.stringify(declared[1])}, ${declared[1]}, () => (${expected.js}));`;
    } else {
      const expr = span.replace(/;\s*$/, '');
      if (!parses(`return (${expr}\n);`, typescript)) throw new Error(`${where(index)}: a result comment must end an expression or a const/let declaration`);
      out[start] = `__doctest.check(${loc}, ${JSON.stringify(expr.trim())}, (${out[start]}`;
      out[index] = `${out[index].replace(/;\s*$/, '')}), () => (${expected.js}));`;
    }
    floor = index + 1;
  }
  return { lines: out, checks: comments.map((c) => where(c.index)) };
}

// ---------------------------------------------------------------- running

function runProcess(command, args, { cwd, env, timeoutMs, input }) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    if (input !== undefined) child.stdin.end(input);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

function childEnv(app, extra = {}) {
  const env = { ...process.env, PATH: `${join(app, 'node_modules', '.bin')}:${process.env.PATH}`, ...extra };
  delete env.MONGODB_URI;
  delete env.NODE_OPTIONS;
  delete env.NODE_TEST_CONTEXT;
  return env;
}

/**
 * Runs a js/ts block. Resolves with `{ ok, message, checks }`. `context` holds
 * `{ app, serverUri, suffix, root, index }`, and optionally `runtime`: the command that
 * runs the module instead of this Node.js, as `[program, ...arguments before the file]`
 * (Bun, Deno), and `env`, variables added to its environment.
 */
export async function runScript(block, context) {
  // The annotations' lines and the block's, each instrumented with its own line numbers.
  const pieces = [
    ...block.setup.map((a) => ({ code: a.code, first: a.firstCodeLine })),
    { code: block.code, first: block.line + 1 },
    ...block.teardown.map((a) => ({ code: a.code, first: a.firstCodeLine })),
  ].map(({ code, first }) => {
    const plain = code.replace(/\n$/, '').split('\n');
    return { plain, ...instrument(plain, (i) => `${block.file}:${first + i}`, { typescript: TS_LANGS.has(block.lang) }) };
  });
  const checks = pieces.flatMap((p) => p.checks);
  const esm = pieces.some((p) => p.plain.some((l) => /^\s*import\s/.test(l)));
  const ts = TS_LANGS.has(block.lang);
  const body = pieces.flatMap((p) => p.lines).join('\n');
  const { text, databases } = rewriteForServer(body, context.serverUri, context.suffix);
  const base = `block-${context.index}`;
  let file;
  if (ts) {
    const plain = rewriteForServer(pieces.flatMap((p) => p.plain).join('\n'), context.serverUri, context.suffix).text;
    const typed = await typeCheck(plain, context, base);
    if (!typed.ok) return { ...typed, databases, checks };
  }
  let source;
  if (esm) {
    source = `import __doctest from ${JSON.stringify(CHECK)};\n${text}\n__doctest.finish();\n`;
    file = join(context.app, `${base}.mjs`);
  } else {
    source = `const __doctest = require(${JSON.stringify(CHECK)});\n__doctest.run(async () => {\n${text}\n});\n`;
    file = join(context.app, `${base}.cjs`);
  }
  if (ts) source = transpile(source, esm);
  writeFileSync(file, source);
  const report = join(context.app, `${base}.report.json`);
  const [program, ...programArgs] = context.runtime ?? [process.execPath];
  const run = await runProcess(program, [...programArgs, file], {
    cwd: context.app,
    env: childEnv(context.app, { ...context.env, DOCTEST_REPORT: report }),
    timeoutMs: context.timeoutMs ?? 20_000,
  });
  const { checked: reached = [], finished = false } = existsSync(report) ? JSON.parse(readFileSync(report, 'utf8')) : {};
  const output = `${run.stdout}${run.stderr}`.trim();
  if (run.timedOut)
    return { ok: false, databases, checks, message: `did not exit within ${(context.timeoutMs ?? 20_000) / 1000} s (a client left open?)\n${output}\n(module: ${file})` };
  if (run.code !== 0) return { ok: false, databases, checks, message: `${output}\n(module: ${file})` };
  if (!finished) return { ok: false, databases, checks, message: `the process ended before the block did (exit status ${run.code})\n${output}` };
  const missed = checks.filter((c) => !reached.includes(c));
  if (missed.length) return { ok: false, databases, checks, message: `result comments never reached: ${missed.join(', ')}` };
  return { ok: true, databases, checks, output };
}

async function typeCheck(source, context, base) {
  const tsc = require.resolve('typescript/bin/tsc');
  const file = `${base}.mts`;
  writeFileSync(join(context.app, file), `${source}\nexport {};\n`);
  const config = `${base}.tsconfig.json`;
  writeFileSync(
    join(context.app, config),
    JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], skipLibCheck: true },
      files: [file],
    }),
  );
  const run = await runProcess(process.execPath, [tsc, '-p', config], { cwd: context.app, env: childEnv(context.app), timeoutMs: 120_000 });
  return run.code === 0 ? { ok: true } : { ok: false, message: `tsc --strict:\n${run.stdout}${run.stderr}` };
}

function transpile(source, esm) {
  const ts = require('typescript');
  return ts.transpileModule(source, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: esm ? ts.ModuleKind.ESNext : ts.ModuleKind.CommonJS },
  }).outputText;
}

/** Runs a console block as one bash session and compares the transcript byte for byte. */
export async function runSession(block, context) {
  const lines = block.code.replace(/\n$/, '').split('\n');
  const script = ['set +e', 'exec 2>&1'];
  let databases = [];
  for (const line of lines) {
    if (!line.startsWith('$ ')) continue;
    const command = line.slice(2);
    const rewritten = rewriteForServer(command, context.serverUri, context.suffix);
    databases = databases.concat(rewritten.databases);
    script.push(`printf '%s\\n' ${shellQuote(line)}`, rewritten.text);
  }
  const run = await runProcess('bash', ['-c', script.join('\n')], {
    cwd: context.app,
    env: childEnv(context.app),
    timeoutMs: context.timeoutMs ?? 60_000,
  });
  const transcript = run.stdout + run.stderr;
  if (run.timedOut) return { ok: false, databases, message: `session did not end\n${transcript}` };
  if (transcript !== block.code) {
    return { ok: false, databases, expected: block.code, actual: transcript, message: 'the session transcript differs from the block' };
  }
  return { ok: true, databases };
}

function shellQuote(s) {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Checks an sh block's commands against package.json (see the rules at the top). */
export function checkShell(block, pkg, root) {
  const problems = [];
  const checked = [];
  for (const raw of block.code.split('\n')) {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (!line) continue;
    for (const command of line.split(/\s*&&\s*/)) {
      const words = command.split(/\s+/);
      let ok = false;
      if (words[0] === 'npm' && (words[1] === 'install' || words[1] === 'i') && words.length === 3) {
        const name = words[2].replace(/(.)@[^/]*$/, '$1');
        ok = name === pkg.name;
        if (!ok) problems.push(`\`${command}\` installs '${name}', the package is '${pkg.name}'`);
      } else if (words[0] === 'npm' && words[1] === 'install' && words.length === 2) {
        ok = existsSync(join(root, 'package.json'));
      } else if (words[0] === 'npm' && words[1] === 'run' && words.length === 3) {
        ok = Object.hasOwn(pkg.scripts ?? {}, words[2]);
        if (!ok) problems.push(`\`${command}\`: package.json has no script '${words[2]}'`);
      } else if (words[0] === 'npm' && ['test', 't'].includes(words[1]) && words.length === 2) {
        ok = Object.hasOwn(pkg.scripts ?? {}, 'test');
        if (!ok) problems.push(`\`${command}\`: package.json has no test script`);
      } else {
        problems.push(`\`${command}\`: no check for this command (annotate the block with \`not run: <reason>\`)`);
      }
      if (ok) checked.push(command);
    }
  }
  if (!checked.length && !problems.length) problems.push('an sh block with no command');
  return { ok: problems.length === 0, message: problems.join('\n'), checked };
}

const PATH_TOKEN = /(?<![\w/.-])((?:[\w.-]+\/)+[\w.-]*|[\w-]+\.(?:js|mjs|cjs|ts|mts|rs|md|json|toml|ya?ml))(?![\w/-])/g;

/** Checks a text block: the paths it names exist under `root`. */
export function checkText(block, root) {
  const paths = [...new Set([...block.code.matchAll(PATH_TOKEN)].map((m) => m[1]))];
  const missing = paths.filter((p) => !existsSync(join(root, p)));
  if (!paths.length) return { ok: false, message: 'a text block that names no path: nothing to check (annotate it `not run: <reason>`)' };
  return { ok: missing.length === 0, message: `paths named but not in the repository: ${missing.join(', ')}`, checked: paths };
}

/** Removes an app folder. */
export function removeApp(dir) {
  rmSync(dir, { recursive: true, force: true });
}
