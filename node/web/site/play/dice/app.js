// app.js: /play/dice/: the dice duel (`dice`, modules/dice/src/lib.rs; docs/randomness.md). The
// player's key (kept in this browser, WIF export/import), the faucet on dev chains, the balance,
// live open duels, create (a stake, optionally an invited opponent), join, cancel, and the roll:
// the join schedules a call of the module for the next block, which rolls two dice for each
// player from that block's randomness beacon. Once rolled the page shows both players' dice, the
// block height, its beacon (short), checks that beacon against the genesis beacon key
// (`verifyBeacon`: a BLS signature of the height) and that the dice are its draws (`drawer`, the
// guest SDK's `draw_below(6)`), and links to /verify/ for the whole match re-executed. Redraws on
// each of the module's events (`chain.subscribeGame`, the roll's included: it comes from a
// scheduled call, not a transaction); `#<game id>` in the URL opens a duel. Ops are sent as plain
// SDK game actions (`{type: 'game', game: 'dice', op}`) and views read with `chain.game`.
import { loadSdk, gold, toUnits, $ } from '/common/sdk-loader.js';
import { playerKey } from '/common/player-key.js';
import {
  fillPlayPage, showError, say, short, showHeight, liveStatus, faucetButton, shortHex, actor, provenBalance, showProvenBalance,
} from '/common/play-page.js';

fillPlayPage({ page: 'dice', noun: 'duels', more: false });
const { Chain, Key, ChainError, getStateProven, verifyBeacon, drawer } = await loadSdk();
const chain = new Chain(location.origin);
const MODULE = 'dice';
const FACES = ['⚀', '⚁', '⚂', '⚃', '⚄', '⚅'];
const [status, genesis] = await Promise.all([chain.status(), chain.genesis()]);
let info = null;
try { info = await chain.game(MODULE, {}); } catch (e) {
  const box = $('notice');
  box.hidden = false;
  box.textContent = e instanceof ChainError && e.code === 'not_found'
    ? 'This node has no dice module (a chain made without it at genesis): nothing here can be played.'
    : `The dice module did not answer: ${e.message ?? e}`;
}
let head = status.height;
let key = null;
let current = null; // the open duel's id

const act = actor({ chain, ChainError, getKey: () => key, refresh });
const op = (o) => ({ type: 'game', game: MODULE, op: o });
const who = (a) => (a === key.address ? 'you' : short(a));

faucetButton(genesis, () => act('faucet', { type: 'faucet', token: 'GOLD' }));
key = playerKey({
  Key, network: status.network, $, showError,
  onChange: (k) => { key = k; refresh(); },
  replaceWarning: 'Replace this key with a new one? Export it first if it holds GOLD.',
});

$('create-btn').onclick = () => {
  const o = { kind: 'create' };
  try {
    o.stake = toUnits($('stake').value);
    const opp = $('opponent').value.trim();
    if (opp) o.opponent = opp;
  } catch (e) { showError(e.message); return; }
  act('create', op(o)).then((r) => {
    const ev = r && r.ok && r.events.find((e) => e.kind === 'dice.created');
    if (ev && typeof ev.data?.id === 'string') location.hash = ev.data.id;
  });
};
$('join-btn').onclick = () => current && act('join', op({ kind: 'join', id: current }));
$('cancel-btn').onclick = () => current && act('cancel', op({ kind: 'cancel', id: current }));
$('refund-btn').onclick = () => current && act('claim_refund', op({ kind: 'claim_refund', id: current }));

function gameLine(g) {
  const li = document.createElement('li');
  const a = document.createElement('a');
  a.href = `#${g.id}`;
  a.textContent = g.id;
  const rolled = g.x_dice?.length === 2 && g.o_dice?.length === 2 ? ` · ${g.x_dice[0] + g.x_dice[1]} : ${g.o_dice[0] + g.o_dice[1]}` : '';
  li.append(a, ` ${g.status} · stake ${gold(g.stake)} GOLD · x ${who(g.x)}${g.o ? ` · o ${who(g.o)}` : ''}${rolled}`);
  li.dataset.id = g.id;
  return li;
}
// Replaced only when what it shows changed (a list replaced under the pointer swallows a click).
function showList(list, items) {
  const shown = items.map((li) => `${li.dataset.id} ${li.textContent}`).join('\n');
  if (list.dataset.shown === shown) return;
  list.dataset.shown = shown;
  list.replaceChildren(...items);
}

/** A player's two dice (or two blanks before the roll). */
function drawDice(el, mark, dice) {
  const valid = Array.isArray(dice) && dice.length === 2 && dice.every((d) => Number.isInteger(d) && d >= 1 && d <= 6);
  const faces = valid ? dice : [0, 0];
  el.replaceChildren(...faces.map((d) => {
    const s = document.createElement('span');
    s.className = d ? `die ${mark}` : 'die blank';
    s.textContent = d ? FACES[d - 1] : '?';
    s.title = d ? String(d) : 'not rolled yet';
    s.dataset.value = String(d);
    return s;
  }));
  return valid ? dice[0] + dice[1] : null;
}

// The roll of a duel, checked once: the block that ran its call, its beacon, the beacon's BLS
// check under the genesis key, and the dice recomputed from the beacon's draws.
const rolls = new Map(); // game id → {height, beacon, verified, draws}
async function findRoll(g) {
  if (rolls.has(g.id)) return rolls.get(g.id);
  let found = null;
  // The call runs in the block it is due at, unless more than 64 calls are due at once: then in
  // one of the next few blocks.
  for (let h = g.roll_height; h <= g.roll_height + 10 && !found; h++) {
    let block;
    try { block = await chain.block(h); } catch (e) { if (e instanceof ChainError && e.code === 'not_found') break; throw e; }
    if ((block.scheduled ?? []).some((s) => s.module === MODULE && s.id === g.roll_call)) found = block;
  }
  // Not cached when not found: asked again on the next redraw.
  if (!found) return { error: `the block that rolled (from height ${g.roll_height}) is not found yet` };
  const beacon = found.header.beacon ?? null;
  const beaconKey = genesis.beacon?.public_key ?? null;
  const verified = Boolean(beacon && beaconKey && verifyBeacon(beaconKey, genesis.chain_id, found.height, beacon));
  let draws = null;
  if (beacon) {
    const d = drawer(beacon, MODULE, g.roll_call);
    draws = [1 + d.below(6), 1 + d.below(6), 1 + d.below(6), 1 + d.below(6)];
  }
  const roll = { height: found.height, beacon, verified, draws };
  rolls.set(g.id, roll);
  return roll;
}

function resultText(g) {
  if (g.status === 'cancelled') return `Cancelled: ${gold(g.stake)} GOLD back to ${who(g.x)}.`;
  if (g.result === 'draw') return `Draw${g.reason === 'refund' ? ' (refunded)' : ''}: each player gets ${gold(g.stake)} GOLD back.`;
  const mine = key.address === g.x || key.address === g.o;
  const w = g.winner === key.address ? 'You won' : mine ? 'You lost' : `${short(g.winner)} won`;
  return `${w} (${g.result}): payout ${gold(String(BigInt(g.stake) * 2n))} GOLD to ${who(g.winner)}.`;
}

let shown = null;
async function drawTable(g) {
  shown = g;
  const me = key.address;
  $('table').hidden = false;
  $('game-id').textContent = g.id;
  $('players').textContent = `x: ${who(g.x)} · o: ${g.o ? who(g.o) : g.opponent ? `invited ${short(g.opponent)}` : 'waiting for anyone'} · stake ${gold(g.stake)} GOLD each`;
  const xt = drawDice($('x-dice'), 'x', g.x_dice);
  const ot = drawDice($('o-dice'), 'o', g.o_dice);
  $('x-total').textContent = xt === null ? '' : `= ${xt}`;
  $('o-total').textContent = ot === null ? '' : `= ${ot}`;
  $('dice').dataset.x = (g.x_dice ?? []).join(',');
  $('dice').dataset.o = (g.o_dice ?? []).join(',');
  let turn = '';
  if (g.status === 'open') turn = g.x === me ? 'Waiting for an opponent to join.' : 'Open: join to play o.';
  else if (g.status === 'playing') turn = g.roll_height > head ? `Joined: the chain rolls in block ${g.roll_height} (from its beacon, unknown until then).` : `Rolling in block ${g.roll_height}…`;
  $('turn').textContent = turn;
  $('result').textContent = g.status === 'finished' || g.status === 'cancelled' ? resultText(g) : '';
  $('join-btn').hidden = !(g.status === 'open' && g.x !== me && (!g.opponent || g.opponent === me));
  $('cancel-btn').hidden = !(g.status === 'open' && g.x === me);
  const player = g.x === me || g.o === me;
  const refundFrom = g.roll_height != null && info ? g.roll_height + info.refund_after_blocks : null;
  const canRefund = g.status === 'playing' && player && refundFrom !== null;
  $('refund-btn').hidden = !canRefund;
  $('refund-btn').disabled = !canRefund || head + 1 < refundFrom;
  $('refund-info').textContent = canRefund ? `If the roll never runs, a refund can be claimed from height ${refundFrom}.` : '';
  if (g.status === 'finished') {
    const a = document.createElement('a');
    a.id = 'verify-link';
    a.href = `/verify/?module=${MODULE}&id=${encodeURIComponent(g.id)}`;
    a.textContent = 'Verify this match';
    $('result').append(' ', a);
  }
  const rollEl = $('roll');
  if (g.status === 'finished' && g.reason === 'roll' && Number.isSafeInteger(g.roll_call)) {
    const r = await findRoll(g);
    if (shown !== g) return;
    if (r.error) { rollEl.textContent = r.error; delete rollEl.dataset.verified; return; }
    const same = r.draws && r.draws.join(',') === [...g.x_dice, ...g.o_dice].join(',');
    rollEl.textContent = `Rolled in block ${r.height} from its beacon ${shortHex(r.beacon)}: `
      + (r.verified ? 'beacon verified under the genesis key' : 'the beacon does NOT verify under the genesis key')
      + (same ? '; the dice are its draws.' : '; the dice are NOT its draws.');
    rollEl.title = r.beacon ?? '';
    rollEl.className = r.verified && same ? 'ok' : 'fail';
    rollEl.dataset.height = String(r.height);
    rollEl.dataset.beacon = r.beacon ?? '';
    rollEl.dataset.verified = r.verified && same ? '1' : '0';
  } else {
    rollEl.textContent = '';
    rollEl.className = 'note';
    delete rollEl.dataset.verified;
  }
}

let refreshing = false;
let again = false;
async function refresh() {
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    do {
      again = false;
      const [acct, open, mine, g, proven] = await Promise.allSettled([
        chain.account(key.address),
        info ? chain.game(MODULE, { open: '1' }) : { games: [] },
        info ? chain.game(MODULE, { player: key.address }) : { games: [] },
        current && info ? chain.game(MODULE, { id: current }).catch((e) => (e.code === 'not_found' ? null : Promise.reject(e))) : null,
        provenBalance({ chain, getStateProven, genesis, status, address: key.address }),
      ]);
      const failed = [acct, open, mine, g].find((r) => r.status === 'rejected');
      if (failed) {
        const e = failed.reason;
        showError(e instanceof ChainError ? `${e.code}: ${e.message}` : String(e?.message ?? e));
      }
      if (acct.status === 'fulfilled') $('balance').textContent = gold(acct.value.balances.GOLD);
      showProvenBalance(proven, gold);
      if (open.status === 'fulfilled') {
        showList($('open-list'), open.value.games.map(gameLine));
        $('open-empty').hidden = open.value.games.length > 0;
      }
      if (mine.status === 'fulfilled') showList($('my-list'), [...mine.value.games].reverse().map(gameLine));
      if (g.status === 'fulfilled') {
        if (g.value) await drawTable(g.value);
        else if (current) { shown = null; $('table').hidden = false; $('turn').textContent = `No duel ${current} (yet).`; }
        else { shown = null; $('table').hidden = true; }
      }
      showHeight(head);
    } while (again);
  } catch (e) {
    showError(String(e?.message ?? e));
  } finally {
    refreshing = false;
  }
}

function openFromHash() {
  const id = decodeURIComponent(location.hash.slice(1));
  current = /^[0-9a-f]{16}$/.test(id) ? id : null;
  if (!current) $('table').hidden = true;
  refresh();
}
window.addEventListener('hashchange', openFromHash);

chain.subscribeGame(MODULE, () => refresh(), {
  // A duel in play is redrawn on each head (the roll's block is announced); a rolled one until its block is found.
  onHead: (h) => { head = h.height; showHeight(head); if (shown && (shown.status === 'playing' || (shown.reason === 'roll' && !rolls.has(shown.id)))) refresh(); },
  ...liveStatus,
});
openFromHash();
document.body.dataset.ready = '1';
