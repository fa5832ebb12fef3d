// Passwords never appear in messages, on every error path: connect(uri), the { uri }
// option, a derived Node client's connection, and the CLI's stderr and --json. Passwords
// are random strings of every special character around marker words (fast-check), written
// into the connection string both unescaped and percent-encoded.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { MongoClient } from 'mongodb';
import { setup, seq } from '../helpers.mjs';

const CLI = fileURLToPath(new URL('../../bin/mongodb-sequence.js', import.meta.url));
const SPECIALS = [...' !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~\u00e9\u{1F600}'];
// Marker words no fixed text holds: an upper-case letter, then upper-case letters and digits.
const marker = fc.stringMatching(/^[A-Z][A-Z0-9]{3,7}$/);
const specials = (min, max) => fc.array(fc.constantFrom(...SPECIALS), { minLength: min, maxLength: max }).map((a) => a.join(''));
const password = fc.tuple(specials(0, 3), marker, specials(1, 3), marker, specials(0, 3)).map(([a, m1, b, m2, c]) => ({
  password: `${a}${m1}${b}${m2}${c}`,
  markers: [m1, m2],
}));
// The shape first: a '?' (and a '/') between the markers, unescaped.
const examples = [[{ password: 'PA55?ABC9', markers: ['PA55', 'ABC9'] }], [{ password: 'PA55/ABC9', markers: ['PA55', 'ABC9'] }]];

let env;
let address;
before(async () => {
  env = await setup('redaction');
  address = env.address;
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

function clean(text, { password: pw, markers }) {
  for (const piece of [pw, ...markers]) assert.ok(!text.includes(piece), `message holds ${JSON.stringify(piece)}: ${text}`);
}

/** Connection strings for a password: unescaped, and percent-encoded, to reachable and unreachable servers. */
function uris(pw) {
  return [
    `mongodb://app:${pw}@${address}/db?directConnection=true&serverSelectionTimeoutMS=2000`,
    `mongodb://app:${encodeURIComponent(pw)}@${address}/db?directConnection=true&serverSelectionTimeoutMS=2000`,
    `mongodb://app:${encodeURIComponent(pw)}@127.0.0.1:9/db?serverSelectionTimeoutMS=200`,
  ];
}

test('connect(uri) and the { uri } option never print the password', async () => {
  await fc.assert(
    fc.asyncProperty(password, async (p) => {
      for (const uri of uris(p.password)) {
        const e1 = await seq.connect(uri, { serverSelectionTimeoutMS: 2000 }).then(
          (c) => c.close(),
          (e) => e,
        );
        if (e1) clean(`${e1.code} ${e1.message} ${e1.stack}`, p);
        const e2 = await seq.getNextSequenceValue(env.db, 'r', { uri }).then(
          () => undefined,
          (e) => e,
        );
        if (e2) clean(`${e2.code} ${e2.message} ${e2.stack}`, p);
      }
    }),
    { numRuns: 25, examples },
  );
});

test('a derived connection with the password in the options object never prints it', async () => {
  await fc.assert(
    fc.asyncProperty(password, async (p) => {
      const client = new MongoClient(`mongodb://${address}/?directConnection=true`, {
        auth: { username: 'app', password: p.password },
        serverSelectionTimeoutMS: 2000,
      });
      try {
        const e = await seq.getNextSequenceValue(client.db(env.dbName), 'r').then(
          () => undefined,
          (err) => err,
        );
        assert.ok(e, 'the server has no such user');
        clean(`${e.code} ${e.message} ${e.stack}`, p);
      } finally {
        await client.close();
      }
    }),
    { numRuns: 15 },
  );
});

test('the CLI prints no password on stderr or in --json', async () => {
  await fc.assert(
    fc.property(password, (p) => {
      for (const uri of uris(p.password).slice(0, 2)) {
        for (const json of [false, true]) {
          const r = spawnSync(process.execPath, [CLI, 'list', '--timeout', '2', ...(json ? ['--json'] : [])], {
            env: { ...process.env, MONGODB_URI: uri },
            encoding: 'utf8',
            timeout: 60_000,
          });
          assert.notEqual(r.status, 0);
          clean(r.stdout + r.stderr, p);
        }
      }
    }),
    { numRuns: 6, examples },
  );
});

test("the issue's case: an unescaped ? in the password", async () => {
  const e = await seq.connect(`mongodb://user:pa55?abc@${address}/`).then(
    () => undefined,
    (err) => err,
  );
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.ok(!e.message.includes('pa55'), e.message);
  assert.match(e.message, /percent-encode/);
  const r = spawnSync(process.execPath, [CLI, 'list', '--json'], { env: { ...process.env, MONGODB_URI: 'mongodb://user:pa55?abc@127.0.0.1:9/shop' }, encoding: 'utf8' });
  assert.ok(!r.stdout.includes('pa55') && !r.stderr.includes('pa55'), r.stdout + r.stderr);
});

test('a short password is not "redacted" inside fixed text, which would reveal it', async () => {
  // 'ail' is the password: "authentication failed" must stay as it is.
  const short = await seq.connect(`mongodb://app:ail@${address}/?directConnection=true`, { serverSelectionTimeoutMS: 2000 }).then(
    () => undefined,
    (err) => err,
  );
  assert.ok(short, 'no such user');
  assert.match(short.message, /failed/i);
  assert.ok(!short.message.includes('****'), short.message);
});

/** The CLI run with `args`, on the test server's database; `{ status, output }`. */
function runCli(args) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    env: { ...process.env, MONGODB_URI: `mongodb://${address}/${env.dbName}?directConnection=true&serverSelectionTimeoutMS=2000` },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, output: r.stdout + r.stderr };
}

test("the issue's case: a connection string where the command belongs, or as a counter name", () => {
  for (const json of [[], ['--json']]) {
    const command = runCli(['mongodb://app:PW@host/shop', 'list', ...json]);
    assert.equal(command.status, 2);
    assert.match(command.output, /unknown command/);
    assert.ok(!command.output.includes('PW'), command.output);
    const name = runCli(['current', 'mongodb+srv://app:PW@host/shop', ...json]);
    assert.equal(name.status, 1);
    assert.match(name.output, /SEQUENCE_NOT_FOUND/);
    assert.match(name.output, /mongodb\+srv:\/\/\*\*\*\*@host\/shop/, 'the name is shown with its credentials masked');
    assert.ok(!name.output.includes('PW'), name.output);
  }
});

test("the CLI's answers mask a counter name that is a connection string, and --json stays JSON", () => {
  const name = 'mongodb://app:PW@host/shop';
  const outputs = [
    runCli(['init', name]),
    runCli(['next', name]),
    runCli(['current', name, '--json']),
    runCli(['list']),
    runCli(['list', '--json']),
    runCli(['check', '--json']),
    // The plugin's performance data label and the OpenMetrics label hold the name too.
    runCli(['check']),
    runCli(['check', '--format', 'openmetrics']),
  ];
  for (const r of outputs) {
    assert.equal(r.status, 0, r.output);
    assert.ok(!r.output.includes('PW'), r.output);
  }
  assert.match(outputs[0].output, /created mongodb:\/\/\*\*\*\*@host\/shop/);
  const listed = JSON.parse(outputs[4].output);
  assert.ok(JSON.stringify(listed).includes('mongodb://****@host/shop'), outputs[4].output);
  JSON.parse(outputs[5].output);
  assert.match(outputs[6].output, /'mongodb:\/\/\*\*\*\*@host\/shop'=/);
  assert.match(outputs[7].output, /name="mongodb:\/\/\*\*\*\*@host\/shop"/);
  // Each name is masked on its own: the names after it, up to the last '@', are all there.
  for (const other of ['orders', 'zz@example', '{"tenant":"mongodb://t:PW@h/x","n":1}']) assert.equal(runCli(['init', other]).status, 0);
  const text = runCli(['list']).output;
  const json = JSON.stringify(JSON.parse(runCli(['list', '--json']).output));
  for (const shown of [text, json]) {
    assert.ok(!shown.includes('PW'), shown);
    for (const name of ['mongodb://****@host/shop', 'orders', 'zz@example', 'mongodb://****@h/x']) assert.ok(shown.includes(name), `${name} missing from\n${shown}`);
  }
});

test('a connection string given as any argument of the CLI is never echoed with its password', async () => {
  const place = fc.constantFrom('command', 'name', 'count', 'timeout', 'option', 'scoped name');
  const scheme = fc.constantFrom('mongodb', 'mongodb+srv', 'MongoDB');
  await fc.assert(
    fc.property(password, scheme, place, fc.boolean(), fc.boolean(), fc.boolean(), (p, s, at, escaped, long, json) => {
      const pw = `${escaped ? encodeURIComponent(p.password) : p.password}${long ? 'x'.repeat(1100) : ''}`;
      const uri = `${s}://app:${pw}@host.example/shop`;
      const args = {
        command: [uri, 'list'],
        name: ['current', uri],
        count: ['next', 'n', uri],
        timeout: ['list', '--timeout', uri],
        option: ['list', `--${uri}`],
        'scoped name': ['current', `{"tenant":${uri}}`],
      }[at];
      const r = runCli([...args, ...(json ? ['--json'] : [])]);
      assert.notEqual(r.status, 0, r.output);
      clean(r.output, p);
    }),
    // Found by this test: parseArgs quotes an unknown option cut at its '=', before the '@'.
    { numRuns: 12, examples: [[{ password: 'A0A0=A000', markers: ['A0A0', 'A000'] }, 'mongodb', 'option', false, false, false]] },
  );
});

test('a counter name that is a connection string is shown without its password', async () => {
  await fc.assert(
    fc.asyncProperty(password, fc.boolean(), async (p, long) => {
      const name = `mongodb://app:${p.password}${long ? 'x'.repeat(1100) : ''}@host.example/shop`;
      const e = await seq.getNextSequenceValue(env.db, name).then(
        () => undefined,
        (err) => err,
      );
      assert.equal(e?.code, long ? 'INVALID_ARGUMENT' : 'SEQUENCE_NOT_FOUND', e?.message);
      clean(`${e.message} ${e.stack}`, p);
    }),
    { numRuns: 25 },
  );
  assert.equal(seq.redactConnectionStrings('see mongodb+srv://u:p4ss@h/db?proxyPassword=s3cret&x=1 and more'), 'see mongodb+srv://****@h/db?proxyPassword=****&x=1 and more');
});
