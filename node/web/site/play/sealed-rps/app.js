// app.js: /play/sealed-rps/: rock-paper-scissors with sealed moves (`sealed_rps`,
// modules/sealed_rps/src/lib.rs; docs/sealed-moves.md). The player's key (kept in this browser,
// WIF export/import), the faucet on dev chains, the balance, live open games, create (a stake, an
// invited opponent, the blocks from the join to the round), join, cancel. Once joined the page
// shows the round (the block whose beacon opens both moves) and a countdown in blocks; the player
// picks rock, paper or scissors and the page seals it here with the SDK's `sealMove` (the genesis
// beacon key and chain id, the player's address as sender, the tag `<game id>/<x|o>`, plaintext
// byte 0 = 1 rock, 2 paper, 3 scissors) and sends `{"kind":"move","id","sealed"}`; nobody can read
// it before the round's block, which opens both moves itself. The page hands in no move once the
// chain's head is at or past round − 2 (a move must land in a block before the round, whose block
// settles the game first), and says so; a join the round refuses (full: 64 sealed calls) is told
// to join again a block later. The player's own move is remembered
// in this browser (localStorage) to show it to them. After the round the page shows both opened
// moves and the result, opens both envelopes again here with the round block's beacon (checked
// under the genesis key: `verifyBeacon`, `openSealed`, the envelopes read from the game's
// transcript) and links to /verify/. Redraws on each of the module's events
// (`chain.subscribeGame`: the openings included, they come from scheduled calls) and the countdown
// on each head; `#<game id>` in the URL opens a game. `body[data-seal-ms]` is the last seal's time.
import { loadSdk, gold, toUnits, $ } from '/common/sdk-loader.js';
import { playerKey } from '/common/player-key.js';
import {
  fillPlayPage, showError, say, short, showHeight, liveStatus, faucetButton, shortHex, actor, provenBalance, showProvenBalance,
} from '/common/play-page.js';
import { canSendAt, freshHeight, roundFull } from '/common/sealed-round.js';

fillPlayPage({ page: 'sealed-rps', noun: 'games', more: false });
const { Chain, Key, ChainError, getStateProven, sealMove, plaintextOf, openSealed, verifyBeacon } = await loadSdk();
const chain = new Chain(location.origin);
const MODULE = 'sealed_rps';
const MOVES = { rock: 1, paper: 2, scissors: 3 };
const NAMES = ['void', 'rock', 'paper', 'scissors'];
const SYMBOL = { rock: '✊', paper: '✋', scissors: '✌', void: '∅' };
const [status, genesis] = await Promise.all([chain.status(), chain.genesis()]);
const beaconKey = genesis.beacon?.public_key ?? null;
let info = null;
function notice(text) {
  const box = $('notice');
  box.hidden = false;
  box.textContent = text;
}
try { info = await chain.game(MODULE, {}); } catch (e) {
  notice(e instanceof ChainError && e.code === 'not_found'
    ? 'This node has no sealed_rps module (a chain made without it at genesis): nothing here can be played.'
    : `The sealed_rps module did not answer: ${e.message ?? e}`);
}
if (info && !beaconKey) notice('This chain has no randomness beacon: no move can be sealed to a round of it (a join is refused).');
if (info) $('seal-blocks').value = String(info.default_seal_blocks ?? 20);
let head = status.height;
let key = null;
let current = null; // the open game's id

const act = actor({ chain, ChainError, getKey: () => key, refresh });
const op = (o) => ({ type: 'game', game: MODULE, op: o });
const who = (a) => (a === key.address ? 'you' : short(a));

faucetButton(genesis, () => act('faucet', { type: 'faucet', token: 'GOLD' }));
key = playerKey({
  Key, network: status.network, $, showError,
  onChange: (k) => { key = k; refresh(); },
  replaceWarning: 'Replace this key with a new one? Export it first if it holds GOLD (and finish your games: a move you sealed is shown to you only under this key).',
});

// The player's own sealed move, kept in this browser to show it back (the chain shows nobody).
const mineItem = (id) => `gamechain.sealed_rps.${key.address}.${id}`;
const myMove = (id) => { const m = localStorage.getItem(mineItem(id)); return m && MOVES[m] ? m : null; };

$('create-btn').onclick = () => {
  const o = { kind: 'create' };
  try {
    o.stake = toUnits($('stake').value);
    const opp = $('opponent').value.trim();
    if (opp) o.opponent = opp;
    const blocks = Number($('seal-blocks').value.trim() || '20');
    // The chain takes 2 to 600; a move is handed in only below round − 2, so fewer than 4 would
    // leave the players no block (or one) to move in.
    if (!Number.isInteger(blocks) || blocks < 4 || blocks > 600) throw new Error('the round must be 4 to 600 blocks after the join (a move is handed in only while the chain is below round − 2)');
    o.seal_blocks = blocks;
  } catch (e) { showError(e.message); return; }
  act('create', op(o)).then((r) => {
    const ev = r && r.ok && r.events.find((e) => e.kind === 'sealed_rps.created');
    if (ev && typeof ev.data?.id === 'string') location.hash = ev.data.id;
  });
};
$('join-btn').onclick = async () => {
  if (!current) return;
  const g = shown;
  const r = await act('join', op({ kind: 'join', id: current }));
  if (roundFull(r)) {
    const round = g && Number.isSafeInteger(g.seal_blocks) ? ` (round ${r.height + g.seal_blocks})` : '';
    showError(`join refused: the round${round} is full (${r.error.replace(/^invalid: /, '')}). The round is fixed by the join's block: join again a block later, which picks the next round.`);
  }
};
$('cancel-btn').onclick = () => current && act('cancel', op({ kind: 'cancel', id: current }));

/** Seals `move` to the shown game's round in this browser and sends it. */
async function sealAndSend(move) {
  const g = shown;
  if (!g || g.status !== 'playing' || !Number.isSafeInteger(g.round) || document.body.dataset.busy) return;
  const seat = g.x === key.address ? 'x' : g.o === key.address ? 'o' : null;
  if (!seat) return;
  if (!beaconKey) { showError('This chain has no beacon: nothing can be sealed to a round of it.'); return; }
  // Too late? The head read again: a move must land in a block before the round.
  document.body.dataset.busy = '1';
  head = await freshHeight(chain, head);
  const now = head;
  delete document.body.dataset.busy;
  if (!canSendAt(now, g.round)) {
    showError(`move not sent: too late. The chain is at block ${now} and the round is ${g.round}: a move must land in a block before the round (block ${g.round} opens both moves and settles the game first), so this page hands one in only while the chain is below block ${g.round - 2}. Your seat opens void.`);
    drawTable(g);
    return;
  }
  let sealed;
  let ms;
  try {
    const t0 = performance.now();
    sealed = sealMove({
      beaconPublicKey: beaconKey, chainId: genesis.chain_id, module: MODULE, sender: key.address,
      tag: `${g.id}/${seat}`, round: g.round, plaintext: plaintextOf(Uint8Array.of(MOVES[move])),
    });
    ms = performance.now() - t0;
  } catch (e) {
    showError(`seal: ${e.message ?? e}`);
    return;
  }
  document.body.dataset.sealMs = ms.toFixed(1);
  localStorage.setItem(mineItem(g.id), move);
  const r = await act(`move (${move}, sealed here in ${ms.toFixed(0)} ms)`, op({ kind: 'move', id: g.id, sealed }));
  if (!r || !r.ok) localStorage.removeItem(mineItem(g.id));
}
for (const m of Object.keys(MOVES)) $(`move-${m}`).onclick = () => sealAndSend(m);

function gameLine(g) {
  const li = document.createElement('li');
  const a = document.createElement('a');
  a.href = `#${g.id}`;
  a.textContent = g.id;
  const moves = g.x_move && g.o_move ? ` · ${SYMBOL[g.x_move] ?? '?'} : ${SYMBOL[g.o_move] ?? '?'}` : '';
  const round = g.status === 'playing' && Number.isSafeInteger(g.round) ? ` · round ${g.round}` : '';
  li.append(a, ` ${g.status} · stake ${gold(g.stake)} GOLD · x ${who(g.x)}${g.o ? ` · o ${who(g.o)}` : ''}${round}${moves}`);
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

/** One seat's box and line: the opened move, or what is known before the round. */
function drawSeat(mark, g) {
  const el = $(`${mark}-move`);
  const state = $(`${mark}-state`);
  const opened = g[`${mark}_move`];
  const player = g[mark];
  const mine = player && player === key.address;
  const own = mine ? myMove(g.id) : null;
  if (opened) {
    el.textContent = SYMBOL[opened] ?? '?';
    el.className = opened === 'void' ? 'die blank' : `die ${mark}`;
    el.title = opened;
    state.textContent = opened === 'void' ? 'void: no move that opens' : opened;
  } else {
    el.textContent = own ? SYMBOL[own] : '?';
    el.className = own ? `die ${mark}` : 'die blank';
    el.title = own ?? 'hidden';
    if (!player) state.textContent = 'waiting for a player';
    else if (g.status !== 'playing') state.textContent = '';
    else if (g[`${mark}_sealed`]) state.textContent = `${mine && own ? `your ${own}: ` : ''}sealed (hidden until round ${g.round})`;
    else state.textContent = mine ? 'your move: pick below' : 'no move yet';
  }
  el.dataset.move = opened ?? '';
  state.dataset.sealed = g[`${mark}_sealed`] ? '1' : '0';
}

// Both envelopes opened again here, once per game: the transcript's moves, the round block's
// beacon (checked under the genesis key), each opened with `openSealed`.
const openings = new Map(); // game id → {height, beacon, verified, x, o}
async function checkOpenings(g) {
  if (openings.has(g.id)) return openings.get(g.id);
  let block;
  try { block = await chain.block(g.round); } catch (e) { return { error: `block ${g.round} is not found yet: ${e.message ?? e}` }; }
  const beacon = block.header.beacon ?? null;
  const verified = Boolean(beacon && beaconKey && verifyBeacon(beaconKey, genesis.chain_id, block.height, beacon));
  const t = await chain.transcript(MODULE, g.id);
  const seen = { x: 'void', o: 'void' };
  for (const s of t.steps) {
    if (s.call != null) continue;
    let body;
    try { body = JSON.parse(s.body); } catch { continue; }
    const a = body.action ?? {};
    const sender = a.type === 'session_game' ? a.account : body.from;
    if (a.op?.kind !== 'move' || typeof a.op.sealed !== 'string') continue;
    const seat = sender === g.x ? 'x' : sender === g.o ? 'o' : null;
    if (!seat) continue;
    const m = beacon ? openSealed(a.op.sealed, beacon) : null;
    seen[seat] = m ? NAMES[m[0]] ?? 'void' : 'void';
  }
  const found = { height: block.height, beacon, verified, ...seen };
  openings.set(g.id, found);
  return found;
}

function resultText(g) {
  if (g.status === 'cancelled') return `Cancelled: ${gold(g.stake)} GOLD back to ${who(g.x)}.`;
  if (g.result === 'draw') return `Draw (${g.reason}): each player gets ${gold(g.stake)} GOLD back.`;
  const mine = key.address === g.x || key.address === g.o;
  const w = g.winner === key.address ? 'You won' : mine ? 'You lost' : `${short(g.winner)} won`;
  return `${w} (${g.result}, ${g.reason}): payout ${gold(String(BigInt(g.stake) * 2n))} GOLD to ${who(g.winner)}.`;
}

let shown = null;
async function drawTable(g) {
  shown = g;
  const me = key.address;
  $('table').hidden = false;
  $('game-id').textContent = g.id;
  $('players').textContent = `x: ${who(g.x)} · o: ${g.o ? who(g.o) : g.opponent ? `invited ${short(g.opponent)}` : 'waiting for anyone'} · stake ${gold(g.stake)} GOLD each`;
  drawSeat('x', g);
  drawSeat('o', g);
  const seat = g.x === me ? 'x' : g.o === me ? 'o' : null;
  const round = Number.isSafeInteger(g.round) ? g.round : null;
  const roundEl = $('round');
  if (round === null) roundEl.textContent = g.status === 'open' ? `The round will be ${g.seal_blocks} blocks after the join.` : '';
  else if (g.status === 'playing' && canSendAt(head, round)) roundEl.textContent = `Round ${round}: both moves open in block ${round}, in ${round - head} blocks (now ${head}). A move must land in a block before the round: this page hands one in only while the chain is below block ${round - 2}.`;
  else if (g.status === 'playing') roundEl.textContent = `Round ${round}: moves are closed (the chain is at block ${head}: a move sent now could land in block ${round}, which settles the game first); block ${round} opens them.`;
  else roundEl.textContent = `Round ${round}: both moves were opened in block ${round}.`;
  roundEl.dataset.round = round === null ? '' : String(round);
  roundEl.dataset.left = round === null ? '' : String(Math.max(0, round - head));
  const canSeal = g.status === 'playing' && seat !== null && !g[`${seat}_sealed`] && round !== null && canSendAt(head, round) && !!beaconKey;
  roundEl.dataset.closed = g.status === 'playing' && round !== null && canSendAt(head, round) ? '0' : '1';
  $('pick').hidden = !canSeal;
  const own = seat ? myMove(g.id) : null;
  $('sealed-info').textContent = seat && g[`${seat}_sealed`] && !g[`${seat}_move`]
    ? `Your move${own ? ` (${own})` : ''}: sealed (hidden until round ${round}).`
    : '';
  let turn = '';
  if (g.status === 'open') turn = g.x === me ? 'Waiting for an opponent to join.' : 'Open: join to play o.';
  else if (g.status === 'playing') {
    const other = seat === 'x' ? 'o' : 'x';
    if (seat && !g[`${seat}_sealed`] && !beaconKey) turn = 'This chain has no beacon: no move can be sealed.';
    else if (seat && !g[`${seat}_sealed`]) turn = canSeal ? `Pick your move before block ${round - 2}: it is sealed here, then sent.` : `Too late to move (the chain is at block ${head}; a move is handed in only below block ${round - 2}): your seat opens void.`;
    else if (seat) turn = g[`${other}_sealed`] ? 'Both moves are sealed: waiting for the round.' : 'Waiting for the other player\'s move (or the round).';
    else turn = 'In play.';
  }
  $('turn').textContent = turn;
  $('result').textContent = g.status === 'finished' || g.status === 'cancelled' ? resultText(g) : '';
  $('join-btn').hidden = !(g.status === 'open' && g.x !== me && (!g.opponent || g.opponent === me));
  $('cancel-btn').hidden = !(g.status === 'open' && g.x === me);
  if (g.status === 'finished') {
    const a = document.createElement('a');
    a.id = 'verify-link';
    a.href = `/verify/?module=${MODULE}&id=${encodeURIComponent(g.id)}`;
    a.textContent = 'Verify this match';
    $('result').append(' ', a);
  }
  const el = $('opening');
  if (g.status === 'finished' && round !== null && g.x_move && g.o_move) {
    const r = await checkOpenings(g);
    if (shown !== g) return;
    if (r.error) { el.textContent = r.error; delete el.dataset.verified; return; }
    const same = r.x === g.x_move && r.o === g.o_move;
    el.textContent = `Both envelopes opened in this browser with the beacon of block ${r.height} (${shortHex(r.beacon)}): `
      + (r.verified ? 'beacon verified under the genesis key' : 'the beacon does NOT verify under the genesis key')
      + `; x ${r.x}, o ${r.o}` + (same ? ', as the chain opened them.' : ', NOT what the chain says it opened.');
    el.title = r.beacon ?? '';
    el.className = r.verified && same ? 'ok' : 'fail';
    el.dataset.verified = r.verified && same ? '1' : '0';
  } else {
    el.textContent = '';
    el.className = 'note';
    delete el.dataset.verified;
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
        else if (current) { shown = null; $('table').hidden = false; $('turn').textContent = `No game ${current} (yet).`; }
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
  // A game in play is redrawn on each head (the countdown); from its round on, read again until
  // the openings' events came.
  onHead: (h) => {
    head = h.height;
    showHeight(head);
    if (shown && shown.status === 'playing') {
      if (Number.isSafeInteger(shown.round) && head >= shown.round) refresh();
      else drawTable(shown);
    }
  },
  ...liveStatus,
});
openFromHash();
document.body.dataset.ready = '1';
