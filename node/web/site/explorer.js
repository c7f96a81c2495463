// explorer.js: the explorer at `/`: the node's status, the latest blocks live from the WebSocket
// (each transaction with its action and receipt), a lookup of a transaction, account, block or
// game, and the modules with their code hashes, upgrade policies and pending upgrades.
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

async function showModules() {
  const { modules } = await chain.modules();
  $('modules').replaceChildren(...modules.map((m) => {
    const tr = document.createElement('tr');
    tr.append(cell(m.id), cell(m.code_hash, 'mono'), cell(`height ${m.deployed_height}${m.upgraded_height != null ? `, upgraded at ${m.upgraded_height}` : ''}`), cell(m.owner, 'mono'),
      cell(describePolicy(m.policy)), cell(describePending(m.pending_upgrade), 'mono'));
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
  div.append(link, ` ${action} `);
  const res = document.createElement('span');
  res.className = r.ok ? 'ok' : 'fail';
  res.textContent = r.ok ? `ok${(r.events ?? []).length ? ` · ${r.events.map((e) => e.kind).join(', ')}` : ''}` : `failed: ${r.error}`;
  div.append(res);
  return div;
}

function addBlock(b) {
  const tr = document.createElement('tr');
  tr.dataset.height = String(b.height);
  const txs = document.createElement('td');
  txs.append(...(b.txs.length ? b.txs.map(describe) : [document.createTextNode('(empty)')]));
  tr.append(cell(String(b.height)), cell(b.hash.slice(0, 16), 'mono'), txs);
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
