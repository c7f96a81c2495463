// explorer.js: the explorer at `/`: the node's status, the latest blocks live from the WebSocket
// (each block's scheduled calls and transactions with their receipts, its beacon as the hash's
// title), a lookup of a transaction, account, block or
// game, and the modules with their code hashes, upgrade policies and pending upgrades, and a
// module's ops, events and views from its schema (`GET /v1/modules/<id>/schema`,
// docs/modules.md, "Schema").
import { loadSdk, $ } from '/common/sdk-loader.js';

const KEEP_BLOCKS = 20;
const { Chain, ChainError } = await loadSdk();
const chain = new Chain(location.origin);

const cell = (text, cls) => { const td = document.createElement('td'); td.textContent = text; if (cls) td.className = cls; return td; };

async function showStatus() {
  const st = await chain.status();
  $('status').replaceChildren(...['chain_id', 'network', 'height', 'head_hash', 'state_root', 'sequencer', 'genesis_hash', 'pending', 'version'].map((k) => {
    const tr = document.createElement('tr');
    tr.append(cell(k), cell(String(st[k] ?? ''), 'mono'));
    return tr;
  }));
  return st;
}

/** A module's upgrade policy in words: who can change its code, and how fast. */
function describePolicy(p) {
  if (!p) return '';
  if (p.kind === 'timelocked') return `timelocked ${p.delay_ms} ms`;
  if (p.kind === 'owner') return 'owner (can change it at once)';
  return p.kind;
}

/** A pending upgrade: its code and when anyone may activate it (block time). */
function describePending(u) {
  if (!u) return '—';
  return `${u.code_hash.slice(0, 16)}… from ${new Date(u.activates_at_ms).toISOString()}`;
}

/** A schema type in words: `amount`, `array of hex`, `object {row: u32, col: u32}`, `"x" | "o"`; `?` when optional, `| null` when nullable. */
function describeType(t) {
  let s = t.type;
  if (t.type === 'array') s = `array of ${describeType(t.items)}`;
  else if (t.type === 'map') s = `map of ${describeType(t.values)}`;
  else if (t.type === 'enum') s = t.values.map((v) => JSON.stringify(v)).join(' | ');
  else if (t.type === 'object') s = `{${describeFields(t.fields)}}`;
  return `${s}${t.nullable ? ' | null' : ''}`;
}

/** Fields `{name: type}` as `name: type, other?: type`. */
const describeFields = (fields) => Object.entries(fields ?? {}).map(([n, t]) => `${n}${t.optional ? '?' : ''}: ${describeType(t)}`).join(', ');

/** One listing line: a name in bold, its fields in monospace, its doc. */
function schemaLine(name, fields, doc) {
  const li = document.createElement('li');
  const b = document.createElement('b');
  b.textContent = name;
  const code = document.createElement('code');
  code.textContent = ` ${fields}`;
  li.append(b, code);
  if (doc) li.append(` — ${doc}`);
  return li;
}

/** Shows module `id`'s ops, events and views from its schema, or why there is none. */
async function showSchema(id) {
  const box = $('schema');
  box.hidden = false;
  box.replaceChildren(`loading the schema of ${id}…`);
  const res = await fetch(`/v1/modules/${encodeURIComponent(id)}/schema`);
  const text = await res.text();
  if (!res.ok) {
    let message = text;
    try { message = JSON.parse(text).error.message; } catch { /* keep the text */ }
    box.replaceChildren(`${id}: ${message}`);
    return;
  }
  const schema = JSON.parse(text);
  const h = document.createElement('h3');
  h.textContent = `Schema of ${id} (module ${schema.module}, version ${schema.schema_version})`;
  const list = (title, items) => {
    const h4 = document.createElement('h4');
    h4.textContent = title;
    const ul = document.createElement('ul');
    ul.append(...items);
    if (!items.length) ul.append('(none)');
    return [h4, ul];
  };
  box.replaceChildren(h,
    ...list('Ops ({"kind": …, fields})', schema.ops.map((o) => schemaLine(o.kind, `{${describeFields(o.fields)}}`, o.doc))),
    ...list('Events', schema.events.map((e) => schemaLine(e.kind, `{${describeFields(e.fields)}}`, e.doc))),
    ...list('Views (GET /v1/games/<module>?query)', schema.views.map((v) => schemaLine(v.name, `?{${describeFields(v.query)}} → ${describeType(v.answer)}`, v.doc))));
}

async function showModules() {
  const { modules } = await chain.modules();
  $('modules').replaceChildren(...modules.map((m) => {
    const tr = document.createElement('tr');
    const show = document.createElement('button');
    show.textContent = 'show';
    show.onclick = () => showSchema(m.id).catch((e) => { $('schema').replaceChildren(String(e.message ?? e)); });
    const schemaCell = cell('');
    schemaCell.append(show);
    tr.append(cell(m.id), cell(m.code_hash, 'mono'), cell(`height ${m.deployed_height}${m.upgraded_height != null ? `, upgraded at ${m.upgraded_height}` : ''}`), cell(m.owner, 'mono'),
      cell(describePolicy(m.policy)), cell(describePending(m.pending_upgrade), 'mono'), schemaCell);
    return tr;
  }));
}

function describe(tx) {
  let action = '';
  try {
    const body = JSON.parse(tx.body);
    const a = body.action ?? {};
    action = `${body.from?.slice(0, 8)}… #${body.nonce} ${a.type}${a.game ? ` ${a.game} ${JSON.stringify(a.op)}` : ''}${a.type === 'transfer' ? ` ${a.amount} → ${a.to}` : ''}${a.module ? ` ${a.module}` : ''}`;
  } catch { action = '(unreadable body)'; }
  const r = tx.receipt ?? {};
  const div = document.createElement('div');
  const link = document.createElement('a');
  link.href = `#${tx.txid}`;
  link.textContent = tx.txid.slice(0, 12);
  div.append(link, ` ${action} `, outcome(r));
  return div;
}

/** A receipt's outcome: ok with its events' kinds, or the error. */
function outcome(r) {
  const res = document.createElement('span');
  res.className = r.ok ? 'ok' : 'fail';
  res.textContent = r.ok ? `ok${(r.events ?? []).length ? ` · ${r.events.map((e) => e.kind).join(', ')}` : ''}` : `failed: ${r.error}`;
  return res;
}

/** A scheduled call the block ran first (docs/randomness.md): its module, id and receipt. */
function describeCall(s) {
  const div = document.createElement('div');
  div.className = 'call';
  div.append(`scheduled call ${s.module} #${s.id} `, outcome(s.receipt ?? {}));
  return div;
}

function addBlock(b) {
  const tr = document.createElement('tr');
  tr.dataset.height = String(b.height);
  const txs = document.createElement('td');
  const lines = [...(b.scheduled ?? []).map(describeCall), ...b.txs.map(describe)];
  txs.append(...(lines.length ? lines : [document.createTextNode('(empty)')]));
  const hash = cell(b.hash.slice(0, 16), 'mono');
  // The block's randomness beacon (a BLS signature of its height by the genesis beacon key).
  if (b.header?.beacon) hash.title = `beacon ${b.header.beacon}`;
  tr.append(cell(String(b.height)), hash, txs);
  $('blocks').prepend(tr);
  while ($('blocks').children.length > KEEP_BLOCKS) $('blocks').lastElementChild.remove();
}

async function lookup(q) {
  $('error').textContent = '';
  $('found').hidden = true;
  q = q.trim();
  if (!q) return;
  try {
    let answer;
    const parts = q.split(/\s+/);
    if (/^[0-9a-fA-F]{64}$/.test(q)) answer = await chain.tx(q);
    else if (/^\d+$/.test(q)) answer = await chain.block(Number(q));
    else if (parts.length === 2) answer = await chain.game(parts[0], { id: parts[1] });
    else answer = await chain.account(q);
    $('found').textContent = JSON.stringify(answer, null, 2);
    $('found').hidden = false;
  } catch (e) {
    $('error').textContent = e instanceof ChainError ? `${e.code}: ${e.message}` : String(e.message ?? e);
  }
}

$('lookup').onclick = () => lookup($('query').value);
$('query').onkeydown = (e) => { if (e.key === 'Enter') lookup($('query').value); };
const fromHash = () => { const q = decodeURIComponent(location.hash.slice(1)); if (q) { $('query').value = q; lookup(q); } };
window.addEventListener('hashchange', fromHash);

const st = await showStatus();
await showModules();
const first = Math.max(1, st.height - 9);
chain.subscribe((b) => { addBlock(b); showStatus(); if (b.txs.some((t) => t.body.includes('"deploy"'))) showModules(); }, {
  fromHeight: first,
  onOpen: () => { $('live').textContent = 'live'; },
  onError: () => { $('live').textContent = 'reconnecting…'; },
});
fromHash();
document.body.dataset.ready = '1';
