// A connection derived from a Node driver Db is exactly the user's connection, or refused:
// TLS checks and files, client certificates, the authentication mechanism, network path and
// write concern, observed on the wire (a TLS front end and a recording proxy in front of
// the test server), compared with what the Node client itself does.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { MongoClient } from 'mongodb';
import { MongoClient as MongoClientV6 } from 'mongodb-v6';
import { setup, seq, rejectsWithCode } from '../helpers.mjs';
import { makeCertificates, tlsFront, recordingProxy, decodeMessages, closable } from '../fixtures/security-lab.mjs';
import { freezingProxy, pastHandshake } from '../fixtures/stalled-server.mjs';

let env;
let certs;
let serverAddress;
const closers = [];
const FAST = { serverSelectionTimeoutMS: 3000 };

before(async () => {
  env = await setup('security');
  serverAddress = env.address;
  certs = makeCertificates(['alice', 'bob', 'carol'], ['dave']);
  await env.db.collection('counters').insertOne({ _id: 'c', sequence_value: 0 });
});
after(async () => {
  await seq.closeSharedClients();
  for (const close of closers.reverse()) await close();
  certs?.remove();
  await env?.close();
});

async function front(options) {
  const f = await tlsFront({ targetPort: serverAddress, ...options });
  closers.push(() => f.close());
  return f;
}
async function proxy() {
  const p = await recordingProxy(serverAddress);
  closers.push(() => p.close());
  return p;
}
function nodeClient(uri, options, Driver = MongoClient) {
  const client = new Driver(uri, { ...FAST, ...options });
  closers.push(() => client.close());
  return client;
}
const ping = (client) => client.db(env.dbName).command({ ping: 1 });
const next = (client, options) => seq.getNextSequenceValue(client.db(env.dbName), 'c', options);

test('1. certificate checks: the options object turning them back on is obeyed (self-signed server refused, like the Node client)', async () => {
  const f = await front(certs.selfSigned);
  for (const [query, options] of [
    ['tls=true&tlsAllowInvalidCertificates=true', { tlsAllowInvalidCertificates: false }],
    ['tls=true&tlsInsecure=true', { tlsInsecure: false }],
  ]) {
    const client = nodeClient(`mongodb://127.0.0.1:${f.port}/?directConnection=true&${query}`, options);
    await assert.rejects(ping(client), `the Node client refuses the self-signed server (${query})`);
    await rejectsWithCode(assert, next(client), 'CONNECTION');
  }
  // Without the override both accept it.
  const lax = nodeClient(`mongodb://127.0.0.1:${f.port}/?directConnection=true&tls=true&tlsAllowInvalidCertificates=true`);
  await ping(lax);
  assert.equal(typeof (await next(lax)), 'number');
});

test('1. tlsCAFile in the options object is the CA trusted (not the built-in roots), and an in-memory ca is refused', async () => {
  const f = await front(certs.server);
  const uri = `mongodb://127.0.0.1:${f.port}/?directConnection=true&tls=true`;
  const trusting = nodeClient(uri, { tlsCAFile: certs.ca });
  await ping(trusting);
  assert.equal(typeof (await next(trusting)), 'number');
  const untrusting = nodeClient(uri);
  await assert.rejects(ping(untrusting));
  await rejectsWithCode(assert, next(untrusting), 'CONNECTION');
  const inMemory = nodeClient(uri, { ca: readFileSync(certs.ca) });
  await ping(inMemory);
  await rejectsWithCode(assert, next(inMemory), 'UNSUPPORTED_CLIENT', /'ca'/);
});

test('1. a certificate the client refuses is named in the error, as the Node client names it, not reported only as no answer', async () => {
  for (const [label, served, options] of [
    ['a CA the client does not trust (the built-in roots)', certs.server, {}],
    ['a self-signed certificate', certs.selfSigned, {}],
    ['a CA file that did not sign it', certs.selfSigned, { tlsCAFile: certs.ca }],
  ]) {
    const f = await front(served);
    const client = nodeClient(`mongodb://127.0.0.1:${f.port}/?directConnection=true&tls=true`, { serverSelectionTimeoutMS: 1500, ...options });
    const nodeError = await ping(client).then(
      () => assert.fail(`${label}: the Node client accepted it`),
      (e) => e,
    );
    assert.match(String(nodeError.message), /certificate/i, `${label}: the Node client names the certificate`);
    const e = await rejectsWithCode(assert, next(client), 'CONNECTION');
    // Whichever ends the call first, the driver's server selection or the call's own bound,
    // the message names the server and the certificate problem.
    assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${f.port}`), `${label}: ${e.message}`);
    assert.match(e.message, /invalid peer certificate/i, `${label}: ${e.message}`);
  }
});

test("2. another user's certificate: two clients on one URI with different client certificates never share a client", async () => {
  const f = await front({ ...certs.server, ca: readFileSync(certs.ca), requestCert: true });
  const uri = `mongodb://127.0.0.1:${f.port}/?directConnection=true&tls=true&tlsCAFile=${encodeURIComponent(certs.ca)}&tlsCertificateKeyFile=${encodeURIComponent(certs.clients.alice)}`;
  const alice = nodeClient(uri);
  const bob = nodeClient(uri, { tlsCertificateKeyFile: certs.clients.bob });
  const before = seq.sharedClientCount();
  await next(alice);
  assert.deepEqual([...new Set(f.peers)], ['alice']);
  f.peers.length = 0;
  await next(bob);
  assert.deepEqual([...new Set(f.peers)], ['bob'], "bob's calls present bob's certificate");
  assert.equal(seq.sharedClientCount(), before + 2);
  // The Node client does the same.
  f.peers.length = 0;
  await ping(bob);
  assert.deepEqual([...new Set(f.peers)], ['bob']);
});

test('the uri option: a certificate file rewritten in place is presented by the next call, through a client that replaces the old one', async () => {
  const f = await front({ ...certs.server, ca: readFileSync(certs.ca), requestCert: true });
  const file = join(certs.dir, 'uri-client.pem');
  copyFileSync(certs.clients.alice, file);
  const uri = `mongodb://127.0.0.1:${f.port}/?directConnection=true&serverSelectionTimeoutMS=3000&tls=true&tlsCAFile=${encodeURIComponent(certs.ca)}&tlsCertificateKeyFile=${encodeURIComponent(file)}`;
  const before = seq.sharedClientCount();
  await next(env.client, { uri });
  assert.deepEqual([...new Set(f.peers)], ['alice']);
  f.peers.length = 0;
  writeFileSync(file, readFileSync(certs.clients.bob));
  await next(env.client, { uri });
  assert.deepEqual([...new Set(f.peers)], ['bob'], 'the file as it is now, not the client opened with the old one');
  assert.equal(seq.sharedClientCount(), before + 1, 'the client opened with the old file was replaced, not kept beside');
});

// One connection, one state: a client replaced after its files were rotated gives its
// cached values back before the new one serves anything, so a reset through the new one
// is never undone by the old one's release.
for (const via of ['uri', 'Node client']) {
  test(`a CA file rewritten in place while a cached handle holds a block (${via}): no value is handed out twice`, async () => {
    const f = await front(certs.server);
    const file = join(certs.dir, `dup-ca-${via === 'uri' ? 'uri' : 'node'}.pem`);
    copyFileSync(certs.ca, file);
    const name = `dup_${via === 'uri' ? 'uri' : 'node'}`;
    const uri = `mongodb://127.0.0.1:${f.port}/${env.dbName}?directConnection=true&serverSelectionTimeoutMS=3000&tls=true&tlsCAFile=${encodeURIComponent(file)}`;
    // A Node client connected before the rewrite holds the driver's copy of the file.
    const connected = async () => {
      const client = nodeClient(uri);
      await ping(client);
      return client.db(env.dbName);
    };
    const dbBefore = via === 'uri' ? env.db : await connected();
    const cached = seq.sequence(dbBefore, name, { ...(via === 'uri' ? { uri } : {}), cache: 10, upsert: true });
    assert.equal(await cached.next(), 1, 'its block holds 2..11');
    // The same CA, other bytes (as a rotation tool rewriting the file would leave it).
    writeFileSync(file, Buffer.concat([readFileSync(certs.ca), Buffer.from('\n')]));
    const dbAfter = via === 'uri' ? env.db : await connected();
    const plain = seq.sequence(dbAfter, name, { ...(via === 'uri' ? { uri } : {}), upsert: true });
    await plain.reset();
    const got = [];
    for (let i = 0; i < 11; i++) got.push(await plain.next());
    assert.deepEqual(got, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    await seq.closeSharedClients();
    got.push(await plain.next(), await cached.next(), await plain.next());
    assert.equal(new Set(got).size, got.length, `a value handed out twice after the reset: ${got}`);
    assert.equal(got[11], 12, 'the reset is not undone by the old client giving its block back');
  });
}

// A TCP proxy to the test server that stops forwarding while `stalled` (a server that
// stopped answering).
async function stallingProxy() {
  const { createServer, connect } = await import('node:net');
  const state = { stalled: false, port: 0 };
  const server = createServer((socket) => {
    const [host, port] = String(serverAddress).split(':');
    const upstream = connect(Number(port), host);
    track(upstream);
    for (const [from, to] of [
      [socket, upstream],
      [upstream, socket],
    ]) {
      from.on('data', (data) => state.stalled || to.write(data));
      from.on('error', () => {});
      from.on('close', () => to.destroy());
    }
  });
  const { track, close } = closable(server);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = server.address().port;
  closers.push(close);
  return state;
}

test('a client retiring after a rotation (its pending call hung) holds up no call of another connection, and its replacement waits at most its timeout', async () => {
  const stall = await stallingProxy();
  const f = await tlsFront({ ...certs.server, targetPort: stall.port });
  closers.push(() => f.close());
  const file = join(certs.dir, 'retiring-ca.pem');
  copyFileSync(certs.ca, file);
  const uri = `mongodb://127.0.0.1:${f.port}/${env.dbName}?directConnection=true&serverSelectionTimeoutMS=3000&tls=true&tlsCAFile=${encodeURIComponent(file)}`;
  await seq.sequence(env.db, 'retiring', { uri, upsert: true }).next();
  const other = seq.sequence(env.db, 'retiring_other', { cache: 1000, upsert: true });
  await other.next();
  stall.stalled = true;
  const hung = seq
    .sequence(env.db, 'retiring', { uri })
    .next()
    .then(
      () => 'resolved',
      (e) => e.code,
    );
  await new Promise((r) => setTimeout(r, 100));
  writeFileSync(file, Buffer.concat([readFileSync(certs.ca), Buffer.from('\n')]));
  const started = Date.now();
  const replacing = seq
    .sequence(env.db, 'retiring', { uri })
    .next()
    .then(
      () => ['resolved'],
      (e) => [e.code, Date.now() - started],
    );
  // Served from its block, while the other connection's client retires.
  const values = await Promise.race([Promise.all(Array.from({ length: 5 }, () => other.next())), new Promise((r) => setTimeout(() => r('held up'), 1000))]);
  assert.deepEqual(values, [2, 3, 4, 5, 6], 'a call of another connection waited for the retiring client');
  assert.equal(await hung, 'CONNECTION');
  const [code, waited] = await replacing;
  assert.equal(code, 'CONNECTION', 'the old client retires only once its hung call times out');
  assert.ok(waited < 3000 + 1500, `the replacing call waited ${waited} ms, past its 3000 ms timeout`);
  stall.stalled = false;
});

test('a client certificate rotated in place: once the shared client is released, calls recover with the new certificate', async () => {
  const f = await front({ ...certs.server, ca: readFileSync(certs.ca), requestCert: true });
  const file = join(certs.dir, 'rotated-client.pem');
  copyFileSync(certs.clients.alice, file);
  const uri = `mongodb://127.0.0.1:${f.port}/?directConnection=true&tls=true&tlsCAFile=${encodeURIComponent(certs.ca)}&tlsCertificateKeyFile=${encodeURIComponent(file)}`;
  // Both connected before the rotation: the driver holds its copy of the file in
  // client.options.key and .cert. One counts before the rotation, the other first after.
  const early = nodeClient(uri);
  const late = nodeClient(uri);
  await ping(early);
  await ping(late);
  await next(early);
  assert.deepEqual([...new Set(f.peers)], ['alice']);
  writeFileSync(file, readFileSync(certs.clients.carol));
  f.peers.length = 0;
  // The open shared client keeps the certificate it opened with, as the Node client's
  // connections do.
  await next(early);
  assert.deepEqual(f.peers, []);
  // Released (closeSharedClients here; the idle and least-recently-used releases and the
  // last Node client closing take the same road): the next client reads the file again.
  await seq.closeSharedClients();
  for (let attempt = 0; attempt < 2; attempt++) {
    assert.equal(typeof (await next(early)), 'number', `call ${attempt + 1} after the release`);
  }
  assert.deepEqual([...new Set(f.peers)], ['carol']);
  f.peers.length = 0;
  // Its first call after the rotation: its copy of the file was never seen equal to the
  // file, so it cannot be told from a certificate given in memory.
  await rejectsWithCode(assert, next(late), 'UNSUPPORTED_CLIENT', /'(cert|key)'.*make the MongoClient again/s);
  assert.deepEqual(f.peers, [], 'nothing was presented for it');
});

test('a replaced WeakSet that calls the addon while a TLS file copy is looked up: both calls answer', async () => {
  const f = await front(certs.server);
  const uri = `mongodb://127.0.0.1:${f.port}/?directConnection=true&serverSelectionTimeoutMS=3000&tls=true&tlsCAFile=${encodeURIComponent(certs.ca)}`;
  const worker = new Worker(new URL('../fixtures/nested-weakset-worker.cjs', import.meta.url), { workerData: { uri, db: env.dbName } });
  // Its calls are bounded (3 s each) and so is its close, so it answers and closes within
  // a minute or it never will: a worker that exits without answering (a call that never
  // settled leaves nothing to keep it alive) or stays silent fails here, naming which
  // step, instead of hanging the run.
  const messages = [];
  worker.on('message', (m) => messages.push(m));
  const exited = once(worker, 'exit').then(([code]) => ({ exitedWith: code }));
  let timer;
  const bounded = (promise) =>
    Promise.race([
      promise,
      new Promise((resolve) => {
        timer = setTimeout(() => resolve({ silentFor: 60_000 }), 60_000);
      }),
    ]).finally(() => clearTimeout(timer));
  const answer = await bounded(Promise.race([once(worker, 'message').then(([result]) => ({ result })), exited]));
  const closed = 'result' in answer ? await bounded(exited) : answer;
  if (!('exitedWith' in closed)) await worker.terminate();
  assert.deepEqual(
    { answer, closed, messages },
    { answer: { result: { nested: true, outer: 1, inner: 1 } }, closed: { exitedWith: 0 }, messages: [{ nested: true, outer: 1, inner: 1 }, 'closed'] },
  );
});

test("key and cert given in memory (one Buffer) beside tlsCertificateKeyFile: refused, never the file's certificate in their place", async () => {
  const f = await front({ ...certs.server, ca: readFileSync(certs.ca), requestCert: true });
  const uri = `mongodb://127.0.0.1:${f.port}/?directConnection=true&tls=true&tlsCAFile=${encodeURIComponent(certs.ca)}&tlsCertificateKeyFile=${encodeURIComponent(certs.clients.alice)}`;
  const bob = readFileSync(certs.clients.bob);
  const client = nodeClient(uri, { key: bob, cert: bob });
  await ping(client);
  assert.deepEqual([...new Set(f.peers)], ['bob'], 'the Node driver reads the file only when key or cert is missing');
  f.peers.length = 0;
  await rejectsWithCode(assert, next(client), 'UNSUPPORTED_CLIENT', /'(cert|key)'/);
  assert.deepEqual(f.peers, [], "alice's certificate was not presented for it");
});

test('a CA file rewritten in place after the Node client made calls: its calls go on once its derivation is forgotten', async () => {
  const f = await front(certs.server);
  const file = join(certs.dir, 'forgotten-ca.pem');
  copyFileSync(certs.ca, file);
  const client = nodeClient(`mongodb://127.0.0.1:${f.port}/?directConnection=true&tls=true&tlsCAFile=${encodeURIComponent(file)}`);
  await ping(client);
  assert.equal(typeof (await next(client)), 'number');
  writeFileSync(file, Buffer.concat([readFileSync(certs.ca), Buffer.from('\n')]));
  // Calls through 20 other Node clients push this client's derivation out of the
  // per-thread memos: its next call derives the connection again from its options.
  for (let i = 0; i < 20; i++) {
    assert.equal(typeof (await next(nodeClient(`mongodb://${serverAddress}/?directConnection=true&appName=memo${i}`))), 'number');
  }
  for (let attempt = 0; attempt < 2; attempt++) {
    assert.equal(typeof (await next(client)), 'number', `call ${attempt + 1} after the rewrite`);
  }
  await seq.closeSharedClients();
  assert.equal(typeof (await next(client)), 'number', 'after the release');
});

test('a CA file rewritten after the Node client connected, derived only afterwards: refused naming ca (its copy cannot be told from a CA in memory)', async () => {
  const f = await front(certs.server);
  const file = join(certs.dir, 'rewritten-ca.pem');
  copyFileSync(certs.ca, file);
  const uri = `mongodb://127.0.0.1:${f.port}/?directConnection=true&tls=true&tlsCAFile=${encodeURIComponent(file)}`;
  const before = nodeClient(uri);
  const after = nodeClient(uri);
  await ping(before);
  await ping(after);
  assert.equal(typeof (await next(before)), 'number');
  // The same CA, other bytes: the Node client's copy no longer equals the file.
  writeFileSync(file, Buffer.concat([readFileSync(certs.ca), Buffer.from('\n')]));
  assert.equal(typeof (await next(before)), 'number', 'derived before the rewrite');
  await rejectsWithCode(assert, next(after), 'UNSUPPORTED_CLIENT', /'ca'.*make the MongoClient again/s);
});

test('3. authMechanism DEFAULT in the options over PLAIN in the URI: SCRAM on the wire, the password never sent', async () => {
  const p = await proxy();
  const password = 'Wire5ecret';
  const cases = [
    ['authMechanism=PLAIN', { authMechanism: 'DEFAULT' }],
    ['authMechanism=PLAIN', {}],
    ['authMechanism=SCRAM-SHA-256', {}],
  ];
  for (const [query, options] of cases) {
    const uri = `mongodb://app:${password}@127.0.0.1:${p.port}/?directConnection=true&${query}`;
    const client = nodeClient(uri, options);
    p.clear();
    await ping(client).catch(() => {});
    const nodeSent = p.sent(password);
    p.clear();
    await next(client).catch(() => {});
    assert.equal(p.sent(password), nodeSent, `${query} ${JSON.stringify(options)}: password on the wire as with the Node client`);
    assert.equal(p.sent('PLAIN'), nodeSent, 'PLAIN is named exactly when the password is sent');
    if (options.authMechanism === 'DEFAULT') {
      // The case of the issue: the Node client negotiates SCRAM, and so does the addon.
      assert.equal(p.sent(password), false);
      assert.ok(p.sent('SCRAM-SHA-'), 'SCRAM was used');
    }
  }
});

test('4. another network path: proxy, lookup, family and other options the derived client cannot follow are refused by name', async () => {
  const uri = `mongodb://${serverAddress}/?directConnection=true`;
  for (const [options, name] of [
    [{ proxyHost: '127.0.0.1', proxyPort: 1 }, 'proxyHost'],
    [{ lookup: (host, opts, cb) => cb(null, '127.0.0.1', 4) }, 'lookup'],
    [{ family: 4 }, 'family'],
    [{ localAddress: '127.0.0.1' }, 'localAddress'],
    [{ servername: 'other' }, 'servername'],
    [{ tlsAllowInvalidHostnames: true, tls: true }, 'tlsAllowInvalidHostnames'],
    [{ autoEncryption: { keyVaultNamespace: 'a.b', kmsProviders: { local: { key: Buffer.alloc(96) } } } }, 'autoEncryption'],
  ]) {
    let client;
    try {
      client = nodeClient(uri, options);
    } catch (e) {
      // autoEncryption needs mongodb-client-encryption to construct; the option is still
      // covered by the table test below.
      assert.equal(name, 'autoEncryption', e.message);
      continue;
    }
    await rejectsWithCode(assert, next(client), 'UNSUPPORTED_CLIENT', new RegExp(`'${name}'`));
  }
  // srvServiceName and srvMaxHosts are carried over (unit tests in node_options/node_options_tests.rs: no
  // DNS here to resolve them).
});

test('5. writeConcern, retryWrites from the options object reach the findAndModify command, as the Node driver sends them', async () => {
  const p = await proxy();
  const uri = `mongodb://127.0.0.1:${p.port}/?directConnection=true`;
  for (const options of [{ writeConcern: { w: 'majority' } }, { w: 'majority', journal: true }, { retryWrites: false }, {}]) {
    const client = nodeClient(uri, options);
    p.clear();
    await client
      .db(env.dbName)
      .collection('counters')
      .findOneAndUpdate({ _id: 'c' }, { $inc: { sequence_value: 1 } });
    const nodeCommand = p.commands().find((c) => c.findAndModify);
    p.clear();
    await next(client);
    const ours = p.commands().find((c) => c.findAndModify);
    assert.ok(nodeCommand && ours);
    const concern = (c) => (c.writeConcern ? { w: c.writeConcern.w, j: c.writeConcern.j ?? c.writeConcern.journal } : undefined);
    assert.deepEqual(concern(ours), concern(nodeCommand), `write concern with ${JSON.stringify(options)}`);
    assert.equal('txnNumber' in ours, 'txnNumber' in nodeCommand, `retryable write with ${JSON.stringify(options)}`);
  }
});

test("5b. a Db's own writeConcern reaches every counter write made through it, as the Node driver's writes on that Db carry it; the call's own option wins", async () => {
  const p = await proxy();
  const client = nodeClient(`mongodb://127.0.0.1:${p.port}/?directConnection=true`);
  const dbConcern = { w: 'majority', journal: true, wtimeoutMS: 4000 };
  const db = client.db(env.dbName, { writeConcern: dbConcern });
  const sent = (command) => p.commands().filter((c) => Object.keys(c)[0] === command);
  const concern = (c) => c.writeConcern && { w: c.writeConcern.w, j: c.writeConcern.j ?? c.writeConcern.journal, wtimeout: c.writeConcern.wtimeout };
  p.clear();
  await db.collection('dbwc_docs').insertOne({ node: true });
  const nodeConcern = concern(sent('insert')[0]);
  assert.deepEqual(nodeConcern, { w: 'majority', j: true, wtimeout: 4000 }, 'the Node driver sends the Db write concern');
  // Every write command each call sends (a counter may be created by an insert or an
  // upsert, a cache fill runs in the background) must carry it.
  const writeCommands = () => p.commands().filter((c) => ['findAndModify', 'insert', 'update', 'delete'].includes(Object.keys(c)[0]));
  await env.db.collection('counters').insertOne({ id: 'dbwc-located', seq: 3 });
  const writes = [
    ['getNextSequenceValue', () => seq.getNextSequenceValue(db, 'dbwc', { upsert: true })],
    ['a cached call', () => seq.getNextSequenceValue(db, 'dbwc-cached', { upsert: true, cache: 10 })],
    ['a cached call from an existing counter', () => seq.getNextSequenceValue(db, 'dbwc', { cache: 10 })],
    ['sequence().next', () => seq.sequence(db, 'dbwc-handle', { upsert: true }).next()],
    ['getNextSequenceBatch', () => seq.getNextSequenceBatch(db, 'dbwc-batch', 3, { upsert: true })],
    ['insertOne', () => seq.insertOne(db, 'dbwc_docs', { x: 1 }, { field: 'n', upsert: true })],
    ['sequence().set', () => seq.sequence(db, 'dbwc-handle').set(40)],
    ['setCountersWhere', () => seq.setCountersWhere(db, { id: 'dbwc-located' }, 50, { field: 'seq' })],
  ];
  for (const [label, call] of writes) {
    p.clear();
    await call();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const ours = writeCommands();
    assert.ok(ours.length > 0, `${label}: no write was sent: ${JSON.stringify(p.commands().map((c) => Object.keys(c)[0]))}`);
    for (const c of ours) assert.deepEqual(concern(c), nodeConcern, `${label}: the ${Object.keys(c)[0]} carries the Db's write concern: ${JSON.stringify(c)}`);
  }
  p.clear();
  await seq.getNextSequenceValue(db, 'dbwc', { writeConcern: { w: 1 } });
  assert.deepEqual(
    sent('findAndModify').map((c) => c.writeConcern?.w),
    [1],
    "the call's writeConcern, not the Db's",
  );
  // The same client's other Db, without one: the default (nothing sent).
  p.clear();
  await seq.getNextSequenceValue(client.db(env.dbName), 'dbwc');
  assert.deepEqual(sent('findAndModify').map(concern), [undefined]);
  // A Db that waits for no acknowledgement cannot return a counter.
  await rejectsWithCode(assert, seq.getNextSequenceValue(client.db(env.dbName, { writeConcern: { w: 0 } }), 'dbwc'), 'INVALID_ARGUMENT', /Db's writeConcern/);
});

test('5c. reads that decide a counter write go to the primary, whatever readPreference the client carries', async (t) => {
  const p = await proxy();
  const client = nodeClient(`mongodb://127.0.0.1:${p.port}/?directConnection=true&readPreference=secondaryPreferred`);
  const db = client.db(env.dbName);
  const mode = (c) => c.$readPreference?.mode ?? 'primary';
  const reads = (collection) => p.commands().filter((c) => Object.keys(c)[0] === 'find' && c.find === collection);
  p.clear();
  await db.collection('rp_docs').findOne({});
  if (reads('rp_docs').map(mode)[0] === 'primary') {
    // A standalone server (mongoeco) is sent no read preference at all.
    t.skip('the server is a standalone: no read preference on the wire');
    return;
  }
  assert.deepEqual(reads('rp_docs').map(mode), ['secondaryPreferred'], "the Node client's own read carries it");
  p.clear();
  await seq.listSequences(db);
  assert.deepEqual(reads('counters').map(mode), ['secondaryPreferred'], 'the derived client carries it: a plain read (listSequences) follows it');
  await db.collection('rp_docs').insertMany([{ n: 7 }, { n: 12 }]);
  // The counter read before a guarded write (a fraction taken over), and syncToMax's
  // look at the numbers in use: on the primary (primaryPreferred on the wire, as a
  // direct connection sends primary).
  await env.db.collection('counters').insertOne({ _id: 'rp-fraction', sequence_value: 2.5 });
  p.clear();
  assert.equal(await seq.getNextSequenceValue(db, 'rp-fraction'), 4);
  assert.equal(await seq.syncToMax(db, 'rp_docs', 'n', 'rp-sync'), 12);
  const decided = [...reads('counters'), ...reads('rp_docs')];
  assert.ok(decided.length >= 2, JSON.stringify(p.commands().map((c) => Object.keys(c)[0])));
  for (const c of decided) assert.notEqual(mode(c), 'secondaryPreferred', `a read that decides a write: ${JSON.stringify(c)}`);
});

test("5d. a Db's own readConcern and readPreference reach listSequences as the Node driver's reads on that Db carry them; current and the reads that decide a write read the primary's latest", async () => {
  const p = await proxy();
  // The client's own read concern is majority too: the reads that decide a write must
  // not follow it either (a majority read may miss a number just written with w: 1).
  const client = nodeClient(`mongodb://127.0.0.1:${p.port}/?directConnection=true&readConcernLevel=majority`);
  const db = client.db(env.dbName, { readConcern: { level: 'available' }, readPreference: 'secondaryPreferred' });
  const finds = (collection) => p.commands().filter((c) => Object.keys(c)[0] === 'find' && c.find === collection);
  const level = (c) => c.readConcern?.level;
  const mode = (c) => c.$readPreference?.mode ?? 'primary';
  p.clear();
  await db.collection('rc_docs').findOne({});
  const [nodeRead] = finds('rc_docs');
  assert.equal(level(nodeRead), 'available', "the Node driver's read on the Db carries the Db's read concern");
  // A standalone (mongoeco) is sent no read preference at all.
  const replicaSet = mode(nodeRead) !== 'primary';
  p.clear();
  await seq.listSequences(db);
  const [listing] = finds('counters');
  assert.equal(level(listing), 'available', `listSequences carries the Db's read concern: ${JSON.stringify(listing)}`);
  assert.equal(mode(listing), mode(nodeRead), "listSequences reads where the Db's reads go");
  // The same client's Db without settings: the client's read concern.
  p.clear();
  await seq.listSequences(client.db(env.dbName));
  assert.equal(level(finds('counters')[0]), 'majority');
  // (A direct connection sends primary as primaryPreferred.)
  if (replicaSet) assert.notEqual(mode(finds('counters')[0]), 'secondaryPreferred');
  // current, a fraction taken over (the read before a guarded write) and syncToMax's look
  // at the numbers in use: the primary's latest, whatever the Db and its client say.
  await env.db.collection('rc_docs').insertMany([{ n: 7 }, { n: 12 }]);
  await env.db.collection('counters').insertOne({ _id: 'rc-fraction', sequence_value: 2.5 });
  p.clear();
  assert.equal(
    await seq
      .sequence(db, 'c')
      .current()
      .then((v) => typeof v),
    'number',
  );
  assert.equal(await seq.getNextSequenceValue(db, 'rc-fraction'), 4);
  assert.equal(await seq.syncToMax(db, 'rc_docs', 'n', 'rc-sync'), 12);
  const decided = [...finds('counters'), ...finds('rc_docs')];
  assert.ok(decided.length >= 3, JSON.stringify(p.commands().map((c) => Object.keys(c)[0])));
  for (const c of decided) {
    assert.equal(level(c), 'local', `a read that decides a write or reads a counter: ${JSON.stringify(c)}`);
    assert.notEqual(mode(c), 'secondaryPreferred', JSON.stringify(c));
  }
  // A Db whose read settings cannot be carried fails only the read that would use them
  // (a hedged read preference, as the Node driver's object holds one).
  const odd = { databaseName: env.dbName, client, readPreference: { mode: 'nearest', hedge: { enabled: true } } };
  await rejectsWithCode(assert, seq.listSequences(odd), 'UNSUPPORTED_CLIENT', /the Db's readPreference/);
  assert.equal(typeof (await seq.getNextSequenceValue(odd, 'c')), 'number', 'a value-taking call never reads with them');
  assert.equal(typeof (await seq.sequence(odd, 'c').current()), 'number');
  // With a call's uri, the connection string's read settings apply, not the Db's.
  p.clear();
  assert.ok(Array.isArray(await seq.listSequences(odd, { uri: `mongodb://127.0.0.1:${p.port}/?directConnection=true` })));
  assert.equal(level(finds('counters')[0]), undefined, JSON.stringify(finds('counters')));
});

test("pool sizes: maxPoolSize caps the derived client's connections as it caps the Node client's (counted at a proxy)", async () => {
  // Connections through a fresh proxy that carried a findAndModify: the pool's, not the
  // monitors' (which only say hello).
  const used = (p) => p.bytes().filter((sent) => decodeMessages(sent).some((c) => Object.keys(c)[0] === 'findAndModify')).length;
  const load = (run) => Promise.all(Array.from({ length: 40 }, run));
  for (const maxPoolSize of [1, 5]) {
    const p = await proxy();
    // Never connected itself: every connection at this proxy is the derived client's.
    const client = nodeClient(`mongodb://127.0.0.1:${p.port}/?directConnection=true&maxPoolSize=${maxPoolSize}`);
    await load(() => next(client, { coalesce: false }));
    const ours = used(p);
    const q = await proxy();
    const node = nodeClient(`mongodb://127.0.0.1:${q.port}/?directConnection=true&maxPoolSize=${maxPoolSize}`);
    const counters = node.db(env.dbName).collection('counters');
    await load(() => counters.findOneAndUpdate({ _id: 'c' }, { $inc: { sequence_value: 1 } }));
    const nodes = used(q);
    assert.ok(ours >= 1 && ours <= maxPoolSize, `maxPoolSize=${maxPoolSize}: the derived client used ${ours} connections`);
    assert.ok(nodes >= 1 && nodes <= maxPoolSize, `maxPoolSize=${maxPoolSize}: the Node client used ${nodes} connections`);
    // 40 calls at once need more than one connection when the pool allows it: the cap
    // above is what held them back.
    if (maxPoolSize > 1) assert.ok(ours > 1, `maxPoolSize=${maxPoolSize}: ${ours} connection(s) for 40 concurrent calls`);
  }
});

test('pool sizes the Node driver refuses are refused: a minimum above the maximum, also above maxPoolSize 0 (no limit)', async () => {
  const uri = `mongodb://${serverAddress}/?directConnection=true`;
  for (const options of [
    { maxPoolSize: 0, minPoolSize: 1 },
    { maxPoolSize: 2, minPoolSize: 3 },
  ]) {
    const client = nodeClient(uri, options);
    await assert.rejects(ping(client), /minimum size must not be greater than maximum/, `the Node client with ${JSON.stringify(options)}`);
    await rejectsWithCode(assert, next(client), 'UNSUPPORTED_CLIENT', /'minPoolSize'/);
  }
  // No limit and no minimum: both work.
  const unlimited = nodeClient(uri, { maxPoolSize: 0, minPoolSize: 0 });
  await ping(unlimited);
  assert.equal(typeof (await next(unlimited)), 'number');
});

test('serverApi from the options object (the Atlas snippet) is sent with every command', async () => {
  const p = await proxy();
  const client = nodeClient(`mongodb://127.0.0.1:${p.port}/?directConnection=true`, { serverApi: { version: '1', strict: false, deprecationErrors: false } });
  p.clear();
  await next(client).catch(() => {});
  const ours = p.commands().find((c) => c.findAndModify);
  assert.ok(ours, 'a findAndModify was sent');
  assert.equal(ours.apiVersion, '1');
});

test('the same connection from driver 6 and driver 7 clients shares one client; any mapped difference does not', async () => {
  await seq.closeSharedClients();
  const uri = `mongodb://${serverAddress}/?directConnection=true`;
  await next(nodeClient(uri));
  await next(nodeClient(uri, {}, MongoClientV6));
  assert.equal(seq.sharedClientCount(), 1);
  await next(nodeClient(uri, { writeConcern: { w: 1 } }));
  await next(nodeClient(uri, { appName: 'x' }));
  await next(nodeClient(uri, { readPreference: 'primaryPreferred' }));
  assert.equal(seq.sharedClientCount(), 4);
});

test('an X.509 version 1 client certificate, which the Node client presents, is refused up front naming its version; a version 3 one is presented', async (t) => {
  const dave = certs.v1Clients.dave;
  if (dave.version !== 1) return t.skip(`this openssl made a version ${dave.version} certificate without extensions`);
  const f = await front({ ...certs.server, ca: readFileSync(certs.ca), requestCert: true });
  const uri = `mongodb://127.0.0.1:${f.port}/?directConnection=true&tls=true`;
  const node = nodeClient(uri, { serverSelectionTimeoutMS: 20_000, tlsCAFile: certs.ca, tlsCertificateKeyFile: dave.pem });
  await ping(node);
  assert.ok(f.peers.includes('dave'), 'the Node client presents the version 1 certificate');
  const pemLines = readFileSync(dave.pem, 'utf8')
    .split('\n')
    .filter((line) => line.length > 16 && !line.startsWith('-----'));
  const noKeyMaterial = (e) => {
    for (const line of pemLines) assert.ok(!e.message.includes(line), `the message holds the file's contents: ${e.message}`);
    assert.doesNotMatch(e.message, /-----BEGIN/);
  };
  const started = Date.now();
  const e = await rejectsWithCode(assert, next(node), 'UNSUPPORTED_CLIENT', /X\.509 version 1/);
  assert.match(e.message, /'tlsCertificateKeyFile'/);
  assert.match(e.message, /issue a version 3 certificate/);
  noKeyMaterial(e);
  assert.ok(Date.now() - started < 10_000, `refused up front, not after a timeout (${Date.now() - started} ms)`);
  // The same file in a connection string: refused when the connection is read.
  const inUri = `${uri}&tlsCAFile=${encodeURIComponent(certs.ca)}&tlsCertificateKeyFile=${encodeURIComponent(dave.pem)}&serverSelectionTimeoutMS=20000`;
  noKeyMaterial(await rejectsWithCode(assert, seq.connect(inUri), 'UNSUPPORTED_CLIENT', /X\.509 version 1/));
  noKeyMaterial(await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'c', { uri: inUri }), 'UNSUPPORTED_CLIENT', /X\.509 version 1/));
  // A version 3 certificate of the same CA is presented by the derived client.
  const alice = nodeClient(uri, { tlsCAFile: certs.ca, tlsCertificateKeyFile: certs.clients.alice });
  f.peers.length = 0;
  assert.equal(typeof (await next(alice)), 'number');
  assert.deepEqual([...new Set(f.peers)], ['alice']);
});

test('socketTimeoutMS bounds every call on a server that stops answering, well before serverSelectionTimeoutMS, and the message names it', async () => {
  const frozen = async () => {
    const p = await freezingProxy(serverAddress, pastHandshake);
    closers.push(() => p.close());
    return { proxy: p, uri: `mongodb://127.0.0.1:${p.port}/?directConnection=true` };
  };
  const LONG = 20_000;
  // "Well before" the long bound, with room for a loaded machine.
  const WELL_BEFORE = 10_000;
  const bounded = async (label, call) => {
    const started = Date.now();
    const e = await rejectsWithCode(assert, call(), 'CONNECTION');
    const ms = Date.now() - started;
    assert.ok(ms < WELL_BEFORE, `${label}: rejected after ${ms} ms, not well before ${LONG} ms`);
    assert.match(e.message, /within 1500 ms of the call \(the socketTimeoutMS of the connection\)/, `${label}: ${e.message}`);
  };
  // A Node driver client's options.
  {
    const { proxy, uri } = await frozen();
    const client = nodeClient(uri, { serverSelectionTimeoutMS: LONG, socketTimeoutMS: 1500 });
    const db = client.db(env.dbName);
    await bounded('getNextSequenceValue', () => seq.getNextSequenceValue(db, 'c'));
    assert.ok(proxy.held() > 0, 'the call reached the frozen server');
    await bounded('current', () => seq.sequence(db, 'c').current());
    await bounded('listSequences', () => seq.listSequences(db));
  }
  // A connection string given to connect(uri).
  {
    const { proxy, uri } = await frozen();
    const client = await seq.connect(`${uri}&serverSelectionTimeoutMS=${LONG}&socketTimeoutMS=1500`);
    closers.push(() => client.close());
    const db = client.db(env.dbName);
    await bounded('connect(uri): getNextSequenceValue', () => seq.getNextSequenceValue(db, 'c'));
    assert.ok(proxy.held() > 0, 'the call reached the frozen server');
    await bounded('connect(uri): current', () => seq.sequence(db, 'c').current());
    await bounded('connect(uri): listSequences', () => seq.listSequences(db));
  }
  // socketTimeoutMS 0 (the Node driver's default) is no socket timeout: the server
  // selection timeout bounds the call, and is named.
  {
    const { uri } = await frozen();
    const client = nodeClient(uri, { serverSelectionTimeoutMS: 1500, socketTimeoutMS: 0 });
    const e = await rejectsWithCode(assert, seq.getNextSequenceValue(client.db(env.dbName), 'c'), 'CONNECTION');
    assert.match(e.message, /\(the serverSelectionTimeoutMS of the connection\)/);
  }
});
