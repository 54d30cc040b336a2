#!/usr/bin/env node
// End-to-end test of `headroom-cli mcp` (Model Context Protocol server over stdio),
// driven by the official MCP TypeScript SDK client plus a raw-protocol section.
//
//   node tests/mcp/test_mcp.mjs --cli /path/to/headroom-cli [--source-dir /path/to/repo] [--timeout 240]
//
// Prints one `ok - ...` / `not ok - ...` line per check and a closing
// `mcp: N passed, N failed` line. Exit code 0 only when every check passed.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import AjvModule from 'ajv';
import Ajv2019Module from 'ajv/dist/2019.js';
import Ajv2020Module from 'ajv/dist/2020.js';

const Ajv = AjvModule.default ?? AjvModule;
const Ajv2019 = Ajv2019Module.default ?? Ajv2019Module;
const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;

const HERE = path.dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------- arguments
function usage(msg) {
  if (msg) console.error(`test_mcp: ${msg}`);
  console.error('usage: node test_mcp.mjs --cli PATH/TO/headroom-cli [--source-dir REPO_ROOT] [--timeout SECONDS]');
  process.exit(2);
}

const opts = { cli: null, sourceDir: path.resolve(HERE, '..', '..'), timeoutS: 240 };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      const eq = a.indexOf('=');
      if (eq >= 0) return a.slice(eq + 1);
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--cli' || a.startsWith('--cli=')) opts.cli = val();
    else if (a === '--source-dir' || a.startsWith('--source-dir=')) opts.sourceDir = val();
    else if (a === '--timeout' || a.startsWith('--timeout=')) opts.timeoutS = Number(val());
    else if (a === '-h' || a === '--help') usage();
    else usage(`unknown argument ${a}`);
  }
  if (!opts.cli) usage('--cli is required');
  if (!(opts.timeoutS > 0)) usage('--timeout must be a positive number of seconds');
  opts.cli = path.resolve(opts.cli);
  opts.sourceDir = path.resolve(opts.sourceDir);
  if (!existsSync(opts.cli)) usage(`--cli ${opts.cli} does not exist`);
}

const TIMEOUT_MS = Math.round(opts.timeoutS * 1000);
const REQUEST_OPTS = { timeout: TIMEOUT_MS, maxTotalTimeout: TIMEOUT_MS };

const src = rel => path.join(opts.sourceDir, rel);
const FILES = {
  A: src('sample_traces/pt27_kk_memory_ctx128_fullstep.pickle.gz'),
  N1: src('tests/data/real/gpu_series/niu_fwd_ctx100.pickle.gz'),
  N2: src('tests/data/real/gpu_series/niu_fwd_ctx200.pickle.gz'),
  O: src('tests/data/real/pt20_yiyi_oom_snapshot.pickle'),
};
const NOT_A_SNAPSHOT = path.join(HERE, 'package.json');
const NONEXISTENT = '/nonexistent/x.pickle';

// ---------------------------------------------------------------- reporting
let passed = 0;
let failed = 0;
const children = new Set();
const serverStderr = [];
let stderrBytes = 0;
function keepStderr(d) {
  const t = d.toString();
  serverStderr.push(t);
  stderrBytes += t.length;
  while (stderrBytes > 65536 && serverStderr.length > 1) stderrBytes -= serverStderr.shift().length;
}

function oneLine(s) {
  return String(s).replace(/\s+/g, ' ').trim();
}
function clip(s, n = 600) {
  s = String(s);
  return s.length > n ? `${s.slice(0, n)}... (${s.length} chars)` : s;
}
function show(v, n = 600) {
  try {
    return clip(JSON.stringify(v), n);
  } catch {
    return clip(String(v), n);
  }
}
function info(msg) {
  console.log(`# ${msg}`);
}
function check(name, cond, detail) {
  if (cond) {
    passed++;
    console.log(`ok - ${name}`);
  } else {
    failed++;
    console.log(`not ok - ${name}${detail ? `: ${oneLine(detail)}` : ''}`);
  }
  return !!cond;
}
function errText(e) {
  if (e instanceof McpError) return `McpError code=${e.code} message=${JSON.stringify(e.message)}`;
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}

function dumpServerStderr() {
  const text = serverStderr.join('');
  if (!text.trim()) return;
  const tail = text.length > 6000 ? text.slice(-6000) : text;
  info('---- server stderr (tail) ----');
  for (const line of tail.split('\n')) if (line.length) info(line);
  info('---- end of server stderr ----');
}

function finish() {
  if (failed) dumpServerStderr();
  for (const c of children) {
    try {
      c.kill('SIGKILL');
    } catch {
      /* ignore */
    }
  }
  console.log(`mcp: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

const globalTimer = setTimeout(() => {
  check(`whole test finished within ${opts.timeoutS} s`, false, 'global timeout hit; the server hung or is too slow');
  finish();
}, TIMEOUT_MS);

process.on('unhandledRejection', e => {
  check('no unhandled promise rejection', false, errText(e));
  finish();
});

// ---------------------------------------------------------------- helpers
const label = args =>
  JSON.stringify(args, (k, v) => {
    if (typeof v === 'string') {
      for (const [name, p] of Object.entries(FILES)) if (v === p) return name;
      if (v === NOT_A_SNAPSHOT) return 'package.json';
    }
    return v;
  }).replace(/"([A-Z][A-Z0-9]?|package\.json)"/g, '$1');

const ajvCache = new Map();
function ajvFor(schema) {
  const dialect = typeof schema?.$schema === 'string' ? schema.$schema : '';
  // MCP 2025-11-25: JSON Schema 2020-12 is the default dialect when $schema is absent.
  let kind = '2020';
  if (/draft-0[4-7]/.test(dialect)) kind = '07';
  else if (/2019-09/.test(dialect)) kind = '2019';
  if (!ajvCache.has(kind)) {
    const Cls = kind === '07' ? Ajv : kind === '2019' ? Ajv2019 : Ajv2020;
    ajvCache.set(kind, new Cls({ strict: false, allErrors: true }));
  }
  return ajvCache.get(kind);
}

function fileMatchesUri(uri, file) {
  if (typeof uri !== 'string' || !uri.startsWith('file://')) return false;
  if (uri === pathToFileURL(file).href) return true;
  try {
    const p = fileURLToPath(uri);
    return p === file || realpathSync(p) === realpathSync(file);
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------- SDK section
async function sdkSection() {
  const transport = new StdioClientTransport({
    command: opts.cli,
    args: ['mcp'],
    cwd: opts.sourceDir,
    // Pass the whole environment through (ASAN_OPTIONS etc.); the SDK's default
    // keeps only a handful of variables.
    env: Object.fromEntries(Object.entries(process.env).filter(([, v]) => typeof v === 'string')),
    stderr: 'pipe',
    maxBufferSize: 64 * 1024 * 1024,
  });
  transport.stderr?.on('data', keepStderr);
  // The SDK hands the negotiated version to transports that want it (HTTP does);
  // hook it here to see what the server answered.
  let negotiated = null;
  transport.setProtocolVersion = v => {
    negotiated = v;
  };

  const client = new Client({ name: 'headroom-mcp-test', version: '1.0.0' }, { capabilities: {} });
  client.onerror = e => info(`client transport error: ${errText(e)}`);

  // ---- initialize
  try {
    await client.connect(transport, REQUEST_OPTS);
  } catch (e) {
    check('initialize (client.connect) succeeds', false, errText(e));
    return;
  }
  const sdkChild = transport.pid ? { kill: sig => process.kill(transport.pid, sig) } : null;
  if (sdkChild) children.add(sdkChild);
  check('initialize (client.connect) succeeds', true);
  const sv = client.getServerVersion();
  check('serverInfo.name is "headroom"', sv?.name === 'headroom', `serverInfo=${show(sv)}`);
  info(`serverInfo=${show(sv)}`);
  check(
    `negotiated protocol version (${negotiated}) is one the SDK supports`,
    SUPPORTED_PROTOCOL_VERSIONS.includes(negotiated),
    `SDK supports ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
  );
  const caps = client.getServerCapabilities() ?? {};
  check('server capabilities include tools', caps.tools !== undefined && caps.tools !== null, `capabilities=${show(caps)}`);
  check('server capabilities include resources', caps.resources !== undefined && caps.resources !== null, `capabilities=${show(caps)}`);

  // ---- tools/list
  const EXPECTED_TOOLS = ['open', 'summary', 'diagnose', 'peak', 'whatif', 'ladder', 'replay', 'compare', 'doctor', 'check', 'budget_status'];
  const tools = new Map();
  try {
    let cursor;
    let pages = 0;
    do {
      const r = await client.listTools(cursor ? { cursor } : undefined, REQUEST_OPTS);
      for (const t of r.tools) tools.set(t.name, t);
      cursor = r.nextCursor;
    } while (cursor && ++pages < 20);
    const names = [...tools.keys()].sort();
    const want = [...EXPECTED_TOOLS].sort();
    check(
      `tools/list returns exactly the ${want.length} tools ${EXPECTED_TOOLS.join(', ')}`,
      JSON.stringify(names) === JSON.stringify(want),
      `got [${names.join(', ')}]`,
    );
  } catch (e) {
    check('tools/list succeeds', false, errText(e));
  }
  const validators = new Map();
  for (const name of EXPECTED_TOOLS) {
    const t = tools.get(name);
    if (!t) continue;
    const problems = [];
    if (typeof t.description !== 'string' || !t.description.trim()) problems.push('empty description');
    if (t.inputSchema?.type !== 'object') problems.push(`inputSchema.type=${show(t.inputSchema?.type)}`);
    if (t.outputSchema?.type !== 'object') problems.push(`outputSchema.type=${show(t.outputSchema?.type)}`);
    if (t.outputSchema) {
      try {
        validators.set(name, ajvFor(t.outputSchema).compile(t.outputSchema));
      } catch (e) {
        problems.push(`outputSchema does not compile with Ajv: ${e.message}`);
      }
    }
    check(`tool ${name}: description, object inputSchema, object outputSchema`, problems.length === 0, problems.join('; '));
  }

  // ---- tools/call on real files
  async function call(name, args) {
    const t0 = performance.now();
    try {
      const r = await client.callTool({ name, arguments: args }, undefined, REQUEST_OPTS);
      return { r, ms: performance.now() - t0 };
    } catch (e) {
      return { e, ms: performance.now() - t0 };
    }
  }

  async function callAndValidate(name, args) {
    const { r, e, ms } = await call(name, args);
    const what = `tools/call ${name} ${label(args)}`;
    if (e) {
      check(`${what}: returns a valid result`, false, `threw ${errText(e)}`);
      return null;
    }
    const problems = [];
    if (r.isError === true) {
      const text = (r.content ?? []).map(c => c.text ?? '').join(' ');
      problems.push(`isError=true (${clip(text, 400)})`);
    }
    const sc = r.structuredContent;
    if (!sc || typeof sc !== 'object' || Array.isArray(sc)) problems.push(`structuredContent missing or not an object (${show(sc, 100)})`);
    else if (sc.schema_version !== 2) problems.push(`structuredContent.schema_version=${show(sc.schema_version)}, want 2`);
    if (!Array.isArray(r.content) || !r.content.some(c => c?.type === 'text' && typeof c.text === 'string'))
      problems.push(`content has no {type:"text"} item (${show(r.content, 200)})`);
    const v = validators.get(name);
    if (!v) problems.push('no compiled outputSchema to validate against');
    else if (sc && !v(sc)) problems.push(`does not match outputSchema: ${show(v.errors, 1500)}`);
    check(`${what}: valid result (${ms.toFixed(0)} ms)`, problems.length === 0, problems.join('; '));
    return sc && typeof sc === 'object' ? sc : null;
  }

  const A = FILES.A, N1 = FILES.N1, N2 = FILES.N2, O = FILES.O;
  for (const [k, p] of Object.entries(FILES)) if (!existsSync(p)) info(`warning: test file ${k}=${p} does not exist`);

  const openA = await callAndValidate('open', { file: A });
  if (openA) {
    const devs = openA.devices;
    check(
      'open{A}: devices is a non-empty array with peak_allocated_bytes > 0',
      Array.isArray(devs) && devs.length > 0 && devs.every(d => typeof d?.peak_allocated_bytes === 'number' && d.peak_allocated_bytes > 0),
      `devices=${show(devs)}`,
    );
  }
  await callAndValidate('open', { file: O });
  await callAndValidate('summary', { file: A });
  await callAndValidate('diagnose', { file: O });
  await callAndValidate('peak', { file: A });
  const peak3 = await callAndValidate('peak', { file: A, top: 3 });
  if (peak3) {
    const bs = peak3.by_stack;
    check(
      'peak{A,top:3}: by_stack has at most 3 items, each count >= 1 and bytes > 0',
      Array.isArray(bs) && bs.length <= 3 && bs.every(s => typeof s?.count === 'number' && s.count >= 1 && typeof s?.bytes === 'number' && s.bytes > 0),
      `by_stack=${show(bs)}`,
    );
  }
  const whatifA = await callAndValidate('whatif', { file: A, measured_micro_batch: 1, measured_seq: 128, micro_batch: 2 });
  if (whatifA) {
    check('whatif{A,micro_batch:2}: peak_bytes > 0', typeof whatifA.peak_bytes === 'number' && whatifA.peak_bytes > 0, `peak_bytes=${show(whatifA.peak_bytes)}`);
  }
  // One answer (issue 45): MCP's whatif and ladder are the CLI's --json, number for number.
  const sameAsCli = (what, sc, argv) => {
    const r = spawnSync(opts.cli, argv, { encoding: 'utf8' });
    const same = r.status === 0 && sc && JSON.stringify(JSON.parse(r.stdout)) === JSON.stringify(sc);
    check(`${what}: the same JSON as headroom-cli ${argv.slice(0, 1).join(' ')} --json`, same,
          `cli rc=${r.status} ${show(r.stderr)}`);
  };
  if (whatifA)
    sameAsCli('whatif{A,micro_batch:2}', whatifA,
              ['whatif', '--json', A, '--measured-micro-batch', '1', '--measured-seq', '128', '--micro-batch', '2']);
  await callAndValidate('whatif', { file: N1, seq: 150, measured_seq: 100, measured_micro_batch: 1 });
  // The standing budget (issue 48): a store the CLI recorded, read through MCP as the CLI reads it.
  {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'headroom-mcp-budget-'));
    const db = path.join(dir, 'budget.db');
    const rec = spawnSync(opts.cli, ['budget', 'record', '--db', db, '--config', 'model=mcp-test', A], { encoding: 'utf8' });
    check('budget record (CLI) succeeds', rec.status === 0, show(rec.stderr));
    const st = await callAndValidate('budget_status', { db });
    if (st) {
      check('budget_status: one configuration, not validated (no worst case declared)',
            st.configurations?.length === 1 && st.configurations[0].validated === false &&
              st.configurations[0].shortfall === 'no_worst_case_declared',
            show(st.configurations, 300));
      sameAsCli('budget_status{db}', st, ['budget', 'status', '--json', '--db', db]);
    }
    rmSync(dir, { recursive: true, force: true });
  }
  const ladderA = await callAndValidate('ladder', { file: A, capacity: '40GiB', measured_micro_batch: 1, measured_seq: 128 });
  if (ladderA)
    sameAsCli('ladder{A,40GiB}', ladderA,
              ['ladder', '--json', A, '--capacity', '40GiB', '--measured-micro-batch', '1', '--measured-seq', '128']);
  await callAndValidate('replay', { file: A });
  const cmp = await callAndValidate('compare', { file_a: N1, file_b: N2 });
  if (cmp) {
    check(
      'compare{N1,N2}: peak_delta_bytes > 0 and grew is a non-empty array',
      typeof cmp.peak_delta_bytes === 'number' && cmp.peak_delta_bytes > 0 && Array.isArray(cmp.grew) && cmp.grew.length > 0,
      `peak_delta_bytes=${show(cmp.peak_delta_bytes)} grew=${show(cmp.grew, 300)}`,
    );
  }
  await callAndValidate('doctor', { file: A });
  const chkA = await callAndValidate('check', { file: A, max_peak: '80GiB' });
  if (chkA) info(`check{A,max_peak:80GiB}.passed=${show(chkA.passed)}`);
  const chkN = await callAndValidate('check', { file: N2, baseline: N1, max_growth: '5%' });
  if (chkN) check('check{N2,baseline:N1,max_growth:5%}: passed === false', chkN.passed === false, `passed=${show(chkN.passed)}`);

  // ---- same call twice: files stay loaded
  {
    const first = await call('summary', { file: A });
    const second = await call('summary', { file: A });
    info(`summary{A} twice: first ${first.ms.toFixed(1)} ms, second ${second.ms.toFixed(1)} ms`);
    check(
      'summary{A} called twice: both answer',
      !first.e && !second.e && first.r?.isError !== true && second.r?.isError !== true && second.r?.structuredContent?.schema_version === 2,
      first.e ? `first threw ${errText(first.e)}` : second.e ? `second threw ${errText(second.e)}` : `second=${show(second.r)}`,
    );
  }

  // ---- resources
  try {
    const all = [];
    let cursor;
    let pages = 0;
    do {
      const r = await client.listResources(cursor ? { cursor } : undefined, REQUEST_OPTS);
      all.push(...r.resources);
      cursor = r.nextCursor;
    } while (cursor && ++pages < 20);
    info(`resources/list: ${all.map(r => r.uri).join(' ')}`);
    const find = f => all.find(r => fileMatchesUri(r.uri, f));
    const missing = Object.entries({ A, O }).filter(([, f]) => !find(f)).map(([k]) => k);
    check('resources/list lists the opened files A and O as file:// URIs', missing.length === 0, `missing ${missing.join(', ')}; got ${show(all.map(r => r.uri))}`);
    const resA = find(A);
    if (resA) {
      try {
        const rr = await client.readResource({ uri: resA.uri }, REQUEST_OPTS);
        const text = rr.contents?.find(c => typeof c.text === 'string')?.text;
        let parsed = false;
        let why = '';
        try {
          JSON.parse(text);
          parsed = typeof text === 'string';
        } catch (e) {
          why = e.message;
        }
        check(`resources/read ${resA.uri}: contents text parses as JSON`, parsed, `${why} contents=${show(rr.contents, 300)}`);
      } catch (e) {
        check(`resources/read ${resA.uri} succeeds`, false, errText(e));
      }
    }
  } catch (e) {
    check('resources/list succeeds', false, errText(e));
  }

  // ---- bad requests: JSON-RPC errors, not isError results
  async function expectError(what, name, args, mention) {
    const { r, e } = await call(name, args);
    const title = `${what} is a JSON-RPC error mentioning ${JSON.stringify(mention)}`;
    if (!e) {
      check(title, false, `no error; result=${show(r)}`);
      return;
    }
    if (!(e instanceof McpError)) {
      check(title, false, `threw a non-McpError: ${errText(e)}`);
      return;
    }
    const mentions = [mention].flat();
    const msg = e.message.replace(/^MCP error -?\d+: /, '');
    const ok = typeof e.code === 'number' && msg.trim().length > 0 && mentions.some(m => e.message.toLowerCase().includes(m.toLowerCase()));
    check(`${title} (code ${e.code})`, ok, errText(e));
  }
  await expectError('unknown tool nosuchtool', 'nosuchtool', { file: A }, 'nosuchtool');
  await expectError('summary without file', 'summary', {}, 'file');
  await expectError(`summary{file:${NONEXISTENT}}`, 'summary', { file: NONEXISTENT }, NONEXISTENT);
  await expectError('whatif{A, micro_batch:"lots"}', 'whatif', { file: A, micro_batch: 'lots' }, 'micro_batch');
  await expectError('summary{file:package.json} (not a snapshot)', 'summary', { file: NOT_A_SNAPSHOT }, [NOT_A_SNAPSHOT, path.basename(NOT_A_SNAPSHOT)]);
  {
    const { r, e } = await call('summary', { file: A });
    check('after the bad requests a valid call still works', !e && r?.structuredContent?.schema_version === 2, e ? errText(e) : show(r));
  }

  await client.close();
  if (sdkChild) children.delete(sdkChild);
}

// ---------------------------------------------------------------- raw section
async function rawSection() {
  const child = spawn(opts.cli, ['mcp'], { cwd: opts.sourceDir, stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(child);
  child.stderr.on('data', keepStderr);
  let spawnError = null;
  child.on('error', e => {
    spawnError = e;
  });
  let gone = false;
  const pending = [];
  const exited = new Promise(resolve =>
    child.on('exit', (code, signal) => {
      gone = true;
      resolve({ code, signal });
    }),
  );
  // Once stdout is closed no answer can come: fail the waiting sends at once.
  const flush = () => {
    gone = true;
    while (pending.length) pending.shift()(null);
  };
  child.stdout.on('close', flush);
  child.on('error', flush);
  child.stdin.on('error', () => {}); // EPIPE if the server died

  const badLines = [];
  const rl = createInterface({ input: child.stdout });
  rl.on('line', line => {
    if (!line.trim()) return;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      badLines.push(line);
      return;
    }
    if (msg && typeof msg === 'object' && 'method' in msg) return; // a server-sent request/notification, not an answer
    const w = pending.shift();
    if (w) w(msg);
  });
  const send = (text, waitMs = 60000) =>
    new Promise(resolve => {
      if (gone) return resolve(null);
      const timer = setTimeout(() => {
        const i = pending.indexOf(done);
        if (i >= 0) pending.splice(i, 1);
        resolve(null);
      }, waitMs);
      const done = msg => {
        clearTimeout(timer);
        resolve(msg);
      };
      pending.push(done);
      try {
        child.stdin.write(text);
      } catch {
        /* reported as no response */
      }
    });

  const r1 = await send('this is not json\n');
  check(
    'raw: a line that is not JSON gets error -32700 with id null',
    r1?.error?.code === -32700 && r1.id === null && r1.jsonrpc === '2.0',
    r1 ? `got ${show(r1)}` : `no response line${spawnError ? ` (${spawnError.message})` : ''}`,
  );

  // Initialize so that the following requests are legitimate in any server state.
  const init = await send(
    `${JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    })}\n`,
  );
  check('raw: initialize answers with a result', init?.id === 1 && init.result && typeof init.result.protocolVersion === 'string', `got ${show(init)}`);
  if (init?.result) info(`raw: initialize{2025-06-18} -> protocolVersion ${init.result.protocolVersion}`);
  if (!gone) child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);

  const r2 = await send('{"jsonrpc":"2.0","id":7,"method":"no/such/method"}\n');
  check('raw: unknown method gets error -32601 with id 7', r2?.error?.code === -32601 && r2.id === 7, r2 ? `got ${show(r2)}` : 'no response line');

  // Messages of the wrong shape: each gets an error answer and the session goes on (a
  // "jsonrpc" that is a number once ended the server with an uncaught type_error).
  const sample = path.join(opts.sourceDir, 'sample_traces', 'pt27_silmont_mem_snapshot.pickle');
  const malformed = [
    ['"jsonrpc" a number', { jsonrpc: 2, id: 20, method: 'ping' }],
    ['params an array', { jsonrpc: '2.0', id: 21, method: 'ping', params: [1] }],
    ['a file that is a number', { jsonrpc: '2.0', id: 22, method: 'tools/call', params: { name: 'summary', arguments: { file: 5 } } }],
    ['arguments a string', { jsonrpc: '2.0', id: 23, method: 'tools/call', params: { name: 'summary', arguments: 'x' } }],
    ['an event past the end', { jsonrpc: '2.0', id: 24, method: 'tools/call', params: { name: 'peak', arguments: { file: sample, event: 99999999 } } }],
    ['top of 1e300', { jsonrpc: '2.0', id: 25, method: 'tools/call', params: { name: 'peak', arguments: { file: sample, top: 1e300 } } }],
    ['a micro-batch past int', { jsonrpc: '2.0', id: 26, method: 'tools/call', params: { name: 'whatif', arguments: { file: sample, micro_batch: 3000000000 } } }],
    ['a resource uri that is a number', { jsonrpc: '2.0', id: 27, method: 'resources/read', params: { uri: 7 } }],
    ['a tool name that is a number', { jsonrpc: '2.0', id: 28, method: 'tools/call', params: { name: 12 } }],
    ['an id that is an object', { jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }],
  ];
  for (const [what, message] of malformed) {
    const r = await send(`${JSON.stringify(message)}\n`);
    check(`raw: ${what} gets a JSON-RPC error`, r?.error && typeof r.error.code === 'number' && r.error.message,
          r ? `got ${show(r)}` : 'no response line (did the server exit?)');
  }
  const r4 = await send('"just a string"\n');
  check('raw: a JSON string gets error -32600', r4?.error?.code === -32600, r4 ? `got ${show(r4)}` : 'no response line');

  const r3 = await send('{"jsonrpc":"2.0","id":8,"method":"ping"}\n');
  check(
    'raw: ping gets result {} with id 8',
    r3?.id === 8 && r3.result && typeof r3.result === 'object' && Object.keys(r3.result).length === 0 && !r3.error,
    r3 ? `got ${show(r3)}` : 'no response line',
  );

  child.stdin.end();
  const ex = await Promise.race([exited, new Promise(resolve => setTimeout(() => resolve(null), 15000))]);
  check('raw: server exits with code 0 within 15 s of stdin closing', ex && ex.code === 0, ex ? `code=${ex.code} signal=${ex.signal}` : 'still running');
  check('raw: every stdout line is one JSON message', badLines.length === 0, `non-JSON lines: ${show(badLines)}`);
  if (!ex) child.kill('SIGKILL');
  children.delete(child);
}

// ---------------------------------------------------------------- main
info(`cli=${opts.cli} source-dir=${opts.sourceDir} timeout=${opts.timeoutS}s`);
try {
  await sdkSection();
} catch (e) {
  check('SDK section ran to the end', false, errText(e));
}
try {
  await rawSection();
} catch (e) {
  check('raw section ran to the end', false, errText(e));
}
clearTimeout(globalTimer);
finish();
