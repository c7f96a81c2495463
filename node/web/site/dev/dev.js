// dev.js: the page of `gamechain dev` at /dev/?module=<id>: the module's ops as forms built from
// its schema (GET /v1/modules/<id>/schema), each signed and sent with a dev key kept in this
// browser (localStorage, funded by the faucet); its views (query fields as inputs, the answer
// shown); its events live (Chain.subscribeGame: the node's live query of this module, the latest
// 200 listed). The schema is reloaded when the module's code changes (its deploy or upgrade
// events: an upgrade by `gamechain dev`). `body[data-ready]` is set once the
// first schema is shown.
import { loadSdk, $, gold } from '/common/sdk-loader.js';

const { Chain, Key } = await loadSdk();
const chain = new Chain(location.origin);
const { network } = await chain.status();
const id = new URLSearchParams(location.search).get('module') ?? '';
// One dev key per network: a key of another chain's network is kept for that chain.
const KEY_ITEM = `gamechain-dev-key.${network}`;
const MAX_EVENTS_SHOWN = 200;
let key = storedKey() ?? newKey();
let codeHash = null;

/** The dev key kept in this browser, when it is one of this chain's network. */
function storedKey() {
  try {
    const k = Key.fromWif(localStorage.getItem(KEY_ITEM) ?? '');
    return k.network === network ? k : null;
  } catch { return null; }
}

function newKey() {
  const k = Key.generate(network);
  localStorage.setItem(KEY_ITEM, k.toWif());
  return k;
}

const el = (tag, props = {}, ...children) => { const e = Object.assign(document.createElement(tag), props); e.append(...children); return e; };
const STRING_TYPES = new Set(['string', 'address', 'hex', 'amount', 'enum']);

/** An input's text as the JSON value a field of schema type `t` takes; undefined when empty. */
function value(text, t) {
  if (text === '') return undefined;
  if (STRING_TYPES.has(t.type)) return text;
  try { return JSON.parse(text); } catch { return text; }
}

async function showKey() {
  $('address').textContent = key.address;
  try { const a = await chain.account(key.address); $('balance').textContent = `${gold(a.balances.GOLD)} GOLD`; } catch { $('balance').textContent = ''; }
}

async function send(action, result) {
  result.textContent = 'sending…';
  try {
    const txid = await chain.send(key, action);
    const r = await chain.waitForReceipt(txid, { timeoutMs: 30000 });
    result.textContent = r.ok ? `ok at block ${r.height}${r.events.length ? ` · ${JSON.stringify(r.events)}` : ''}` : `failed: ${r.error}`;
  } catch (e) { result.textContent = `error: ${e.message}`; }
  showKey();
}

/** Inputs for `fields` ({name: type}) and a function reading them as an object. */
function inputs(fields) {
  const boxes = Object.entries(fields ?? {}).map(([name, t]) => [name, t, el('input', { name, placeholder: `${t.type}${t.optional ? '?' : ''}${t.doc ? ` — ${t.doc}` : ''}`, size: 30 })]);
  const read = () => Object.fromEntries(boxes.map(([n, t, i]) => [n, value(i.value.trim(), t)]).filter(([, v]) => v !== undefined));
  return [boxes.map(([n, , i]) => el('label', {}, ` ${n} `, i)), read];
}

function showSchema(schema) {
  $('title').textContent = `${id} (schema version ${schema.schema_version}, code ${codeHash?.slice(0, 12) ?? '?'})`;
  $('ops').replaceChildren(...(schema.ops ?? []).map((op) => {
    const [labels, read] = inputs(op.fields);
    const result = el('span', { className: 'note' });
    const form = el('form', { className: 'op', id: `op-${op.kind}` }, el('b', {}, op.kind), ...labels, ' ', el('button', {}, 'send'), ' ', result, el('div', { className: 'note' }, op.doc ?? ''));
    form.onsubmit = (e) => { e.preventDefault(); send({ type: 'game', game: id, op: { kind: op.kind, ...read() } }, result); };
    return form;
  }));
  $('views').replaceChildren(...(schema.views ?? []).map((v) => {
    const [labels, read] = inputs(v.query);
    const answer = el('pre');
    const form = el('form', { className: 'view', id: `view-${v.name}` }, el('b', {}, v.name), ...labels, ' ', el('button', {}, 'ask'), el('div', { className: 'note' }, v.doc ?? ''), answer);
    form.onsubmit = async (e) => {
      e.preventDefault();
      const q = Object.fromEntries(Object.entries(read()).map(([k, x]) => [k, typeof x === 'string' ? x : JSON.stringify(x)]));
      try { answer.textContent = JSON.stringify(await chain.game(id, q), null, 2); } catch (err) { answer.textContent = `error: ${err.message}`; }
    };
    return form;
  }));
}

async function load() {
  if (!id) { $('ops').textContent = 'open /dev/?module=<id>'; return; }
  try { codeHash = (await chain.module(id)).code_hash; } catch { codeHash = null; }
  const res = await fetch(`/v1/modules/${encodeURIComponent(id)}/schema`);
  const text = await res.text();
  if (!res.ok) { $('ops').textContent = `${id}: ${text}`; return; }
  showSchema(JSON.parse(text));
}

$('faucet').onclick = () => send({ type: 'faucet', token: 'GOLD' }, $('faucet-result'));
$('newkey').onclick = () => {
  if (!confirm('Replace the dev key with a new one? Its GOLD stays with the old key.')) return;
  key = newKey();
  showKey();
};
if (/^[a-z][a-z0-9_]{0,31}$/.test(id)) chain.subscribeGame(id, async ({ height, events }) => {
  let reload = false;
  for (const ev of events) {
    $('events').prepend(el('li', { className: 'mono' }, `#${height} ${ev.kind} ${JSON.stringify(ev.data)}`));
    if (ev.kind === 'deploy' || ev.kind.startsWith('upgrade')) reload = true;
  }
  while ($('events').children.length > MAX_EVENTS_SHOWN) $('events').lastChild.remove();
  if (reload) await load();
}, { onOpen: () => { $('live').textContent = 'live'; }, onError: (e) => { $('live').textContent = `reconnecting (${e.message})`; } });
await showKey();
await load();
document.body.dataset.ready = '1';
