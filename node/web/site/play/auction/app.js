// app.js: /play/auction/: the sealed-bid auction (`auction`, modules/auction/src/lib.rs;
// docs/sealed-moves.md). The player's key (kept in this browser, WIF export/import), the faucet on
// dev chains, the balance, live open auctions, create (a lot, the deposit every bidder escrows, a
// reserve price, the seats reserved, the blocks to the round), add seats, and bids: the bid is
// sealed here with the SDK's `sealMove` (the genesis beacon key and chain id, the player's address
// as sender, the tag the auction's id, the plaintext's bytes 0..8 the bid in GOLD base units, a
// big-endian u64) and sent as `{"kind":"bid","id","sealed"}`, which escrows the deposit and takes
// the first free seat. Before a bid the page says what a void bid costs (one that does not open,
// zero, below the reserve or above the deposit forfeits its deposit to the seller; a valid losing
// bid gets it back) and refuses to seal a bid below the reserve or above the deposit (or zero); it
// hands in no bid once the chain's head is at or past round − 2 (a bid must land in a block before
// the round, whose block opens the bids and closes the auction first), and says so. A create the
// round refuses (full: 64 sealed calls) is told to try again a block later. The page shows the round and a countdown in blocks, the seats taken (never a
// bid before the round; the player's own bid is remembered in this browser to show it back), and
// after the round every opened bid, the winner and the price; it opens every bid again here with
// the round block's beacon (checked under the genesis key; the envelopes read from the auction's
// transcript) and links to /verify/. Redraws on each of the module's events (`chain.subscribeGame`:
// the openings and the close included, they come from scheduled calls) and the countdown on each
// head; `#<auction id>` in the URL opens an auction. `body[data-seal-ms]` is the last seal's time.
import { loadSdk, gold, toUnits, $ } from '/common/sdk-loader.js';
import { playerKey } from '/common/player-key.js';
import {
  fillPlayPage, showError, say, short, showHeight, liveStatus, faucetButton, shortHex, actor, provenBalance, showProvenBalance,
} from '/common/play-page.js';
import { canSendAt, freshHeight, roundFull } from '/common/sealed-round.js';

fillPlayPage({ page: 'auction' });
const { Chain, Key, ChainError, getStateProven, sealMove, openSealed, verifyBeacon } = await loadSdk();
const chain = new Chain(location.origin);
const MODULE = 'auction';
/** Most of "your auctions" kept and shown. */
const MAX_MINE = 20;
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
    ? 'This node has no auction module (a chain made without it at genesis): nothing here can be done.'
    : `The auction module did not answer: ${e.message ?? e}`);
}
if (info && !beaconKey) notice('This chain has no randomness beacon: no bid can be sealed to a round of it (a creation is refused).');
if (info) {
  $('seats').value = String(info.default_seats ?? 2);
  $('seal-blocks').value = String(info.default_seal_blocks ?? 20);
}
let head = status.height;
let key = null;
let current = null; // the open auction's id

const act = actor({ chain, ChainError, getKey: () => key, refresh });
const op = (o) => ({ type: 'game', game: MODULE, op: o });
const who = (a) => (a === key.address ? 'you' : short(a));

faucetButton(genesis, () => act('faucet', { type: 'faucet', token: 'GOLD' }));
key = playerKey({
  Key, network: status.network, $, showError,
  onChange: (k) => { key = k; refresh(); },
  replaceWarning: 'Replace this key with a new one? Export it first if it holds GOLD (a bid you sealed is shown to you only under this key).',
});

// Kept in this browser: the auctions this key created or bid in, and its own sealed bids.
const mineItem = () => `gamechain.auction.${key.address}.mine`;
const bidItem = (id) => `gamechain.auction.${key.address}.${id}`;
function mineIds() {
  try {
    const v = JSON.parse(localStorage.getItem(mineItem()) ?? '[]');
    return Array.isArray(v) ? v.filter((x) => typeof x === 'string' && /^[0-9a-f]{16}$/.test(x)) : [];
  } catch { return []; }
}
function rememberMine(id) {
  const ids = [id, ...mineIds().filter((x) => x !== id)].slice(0, MAX_MINE);
  localStorage.setItem(mineItem(), JSON.stringify(ids));
}
const myBid = (id) => { const v = localStorage.getItem(bidItem(id)); return v && /^[0-9]+$/.test(v) ? v : null; };

/** Base units as a u64 (bigint), or throws a message for the player. */
function u64Of(units) {
  const n = BigInt(units);
  if (n >= 1n << 64n) throw new Error('a bid is at most 2^64 - 1 base units');
  return n;
}

/** A whole number from an input, within [lo, hi], or throws a message for the player. */
function intOf(id, lo, hi, what) {
  const n = Number($(id).value.trim());
  if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`${what} must be a whole number from ${lo} to ${hi}`);
  return n;
}

$('create-btn').onclick = () => {
  const o = { kind: 'create' };
  try {
    o.lot = $('lot').value.trim();
    if (!o.lot) throw new Error('name the lot');
    o.deposit = toUnits($('deposit').value);
    if (o.deposit === '0') throw new Error('the deposit must be more than 0');
    const reserve = $('reserve').value.trim();
    if (reserve) o.reserve = toUnits(reserve);
    o.seats = intOf('seats', 1, 3, 'seats');
    o.seal_blocks = intOf('seal-blocks', 2, 600, 'the round');
    // The chain takes 2 to 600; a bid is handed in only below round − 2, so fewer than 4 would
    // leave bidders no block (or one) to bid in.
    if (o.seal_blocks < 4) throw new Error('the round must be at least 4 blocks ahead: a bid is handed in only while the chain is below round − 2');
  } catch (e) { showError(e.message); return; }
  act('create', op(o)).then((r) => {
    if (roundFull(r)) {
      showError(`create refused: round ${r.height + o.seal_blocks} is full (${r.error.replace(/^invalid: /, '')}). The round is fixed by the creation's block: create again a block later, which picks the next round.`);
    }
    const ev = r && r.ok && r.events.find((e) => e.kind === 'auction.created');
    if (ev && typeof ev.data?.id === 'string') {
      rememberMine(ev.data.id);
      location.hash = ev.data.id;
    }
  });
};

$('add-btn').onclick = () => {
  if (!current) return;
  let n;
  try { n = intOf('add-n', 1, 4, 'seats to add'); } catch (e) { showError(e.message); return; }
  act('add seats', op({ kind: 'add_seats', id: current, n }));
};

/**
 * Why a bid of `units` base units would be void in auction `a` (lib.rs `valid_bid`: more than 0, at
 * least the reserve, at most the deposit), or null when the auction takes it.
 */
function bidProblem(a, units) {
  const u = BigInt(units);
  if (u === 0n) return 'zero';
  if (u < BigInt(a.reserve)) return `below the reserve (${gold(a.reserve)} GOLD)`;
  if (u > BigInt(a.deposit)) return `above the deposit (${gold(a.deposit)} GOLD)`;
  return null;
}

/** Seals a bid of the typed amount to the shown auction's round, here, and sends it. */
$('bid-btn').onclick = async () => {
  const a = shown;
  if (!a || a.status !== 'open' || document.body.dataset.busy) return;
  if (!beaconKey) { showError('This chain has no beacon: nothing can be sealed to a round of it.'); return; }
  let units;
  try {
    units = toUnits($('bid-amount').value);
  } catch (e) {
    showError(`bid: ${e.message ?? e}`);
    return;
  }
  // A void bid forfeits the deposit: this page seals none.
  const problem = bidProblem(a, units);
  if (problem) {
    showError(`bid not sealed: ${gold(units)} GOLD is ${problem}. The auction takes a bid from ${gold(a.reserve === '0' ? '1' : a.reserve)} to ${gold(a.deposit)} GOLD; any other bid is void and its deposit goes to the seller.`);
    return;
  }
  // Too late? The head read again: a bid must land in a block before the round.
  document.body.dataset.busy = '1';
  head = await freshHeight(chain, head);
  const now = head;
  delete document.body.dataset.busy;
  if (!canSendAt(now, a.round)) {
    showError(`bid not sent: too late. The chain is at block ${now} and the round is ${a.round}: a bid must land in a block before the round (block ${a.round} opens every bid first), so this page hands one in only while the chain is below block ${a.round - 2}.`);
    drawAuction(a);
    return;
  }
  let sealed;
  let ms;
  try {
    const plaintext = new Uint8Array(32);
    new DataView(plaintext.buffer).setBigUint64(0, u64Of(units), false);
    const t0 = performance.now();
    sealed = sealMove({
      beaconPublicKey: beaconKey, chainId: genesis.chain_id, module: MODULE, sender: key.address,
      tag: a.id, round: a.round, plaintext,
    });
    ms = performance.now() - t0;
  } catch (e) {
    showError(`bid: ${e.message ?? e}`);
    return;
  }
  document.body.dataset.sealMs = ms.toFixed(1);
  localStorage.setItem(bidItem(a.id), units);
  const r = await act(`bid (${gold(units)} GOLD, sealed here in ${ms.toFixed(0)} ms)`, op({ kind: 'bid', id: a.id, sealed }));
  if (r && r.ok) rememberMine(a.id);
  else localStorage.removeItem(bidItem(a.id));
};
$('bid-amount').oninput = () => drawBidNote(shown);

/** What bidding costs and what the typed bid would be, said before it is sealed. */
function drawBidNote(a) {
  if (!a) return;
  let text = `You escrow the deposit (${gold(a.deposit)} GOLD). A valid bid is from ${gold(a.reserve === '0' ? '1' : a.reserve)} to ${gold(a.deposit)} GOLD: if it loses, the deposit comes back; if it wins, you pay it and get the rest back. A void bid (zero, below the reserve, above the deposit, or one that does not open) forfeits the whole deposit to the seller. This page seals only a valid bid, and only while the chain is below block ${a.round - 2}.`;
  let outside = false;
  try {
    const v = $('bid-amount').value.trim();
    if (v) {
      const problem = bidProblem(a, toUnits(v));
      if (problem) { outside = true; text += ` This bid is ${problem}: it would be void and forfeit your deposit, so it will not be sealed.`; }
    }
  } catch (e) { outside = true; text += ` ${e.message}`; }
  $('bid-note').textContent = text;
  $('bid-note').dataset.outside = outside ? '1' : '0';
}

function auctionLine(a) {
  const li = document.createElement('li');
  const link = document.createElement('a');
  link.href = `#${a.id}`;
  link.textContent = a.id;
  const taken = a.seats.filter((s) => s.bidder).length;
  const end = a.status === 'closed'
    ? (a.winner ? ` · sold to ${who(a.winner)} for ${gold(a.price)} GOLD` : ' · nothing sold')
    : ` · round ${a.round}`;
  li.append(link, ` ${a.status} · “${a.lot}” by ${who(a.seller)} · deposit ${gold(a.deposit)} GOLD · ${taken}/${a.seats.length} seats${end}`);
  li.dataset.id = a.id;
  return li;
}
// Replaced only when what it shows changed (a list replaced under the pointer swallows a click).
function showList(list, items) {
  const shown = items.map((li) => `${li.dataset.id} ${li.textContent}`).join('\n');
  if (list.dataset.shown === shown) return;
  list.dataset.shown = shown;
  list.replaceChildren(...items);
}

/** A seat's line: free, taken (sealed, hidden before the round), or what the round opened. */
function seatItem(a, seat, i) {
  const li = document.createElement('li');
  li.dataset.seat = String(i);
  li.dataset.bidder = seat.bidder ?? '';
  li.dataset.bid = seat.bid ?? '';
  li.dataset.opened = seat.opened ? '1' : '0';
  const mine = seat.bidder && seat.bidder === key.address;
  if (!seat.bidder) {
    li.textContent = seat.opened || a.status === 'closed' ? 'empty' : 'free';
    li.className = 'note';
  } else if (!seat.opened) {
    const own = mine ? myBid(a.id) : null;
    li.textContent = `${who(seat.bidder)}: ${own ? `your bid ${gold(own)} GOLD, ` : ''}sealed (hidden until round ${a.round})`;
  } else {
    const won = a.winner && seat.bidder === a.winner && seat.bid === a.price && a.seats.findIndex((s) => s.bidder === a.winner) === i;
    const forfeit = a.status === 'closed' ? 'deposit forfeited to the seller' : 'its deposit goes to the seller';
    li.textContent = `${who(seat.bidder)}: ${seat.bid === null ? `void (no valid bid opened: ${forfeit})` : `bid ${gold(seat.bid)} GOLD`}${won ? ' · wins' : ''}`;
    li.className = won ? 'ok' : '';
  }
  return li;
}

/** The bid an opened plaintext carries when the auction takes it (lib.rs `valid_bid`), else null. */
function validBid(m, a) {
  if (!m) return null;
  const bid = new DataView(m.buffer, m.byteOffset, 32).getBigUint64(0, false);
  return bid > 0n && bid >= BigInt(a.reserve) && bid <= BigInt(a.deposit) ? String(bid) : null;
}

// Every bid opened again here, once per auction: the transcript's bids, the round block's beacon
// (checked under the genesis key), each envelope opened with `openSealed`.
const openings = new Map(); // auction id → {height, beacon, verified, bids: {bidder: bid|null}}
async function checkOpenings(a) {
  if (openings.has(a.id)) return openings.get(a.id);
  let block;
  try { block = await chain.block(a.round); } catch (e) { return { error: `block ${a.round} is not found yet: ${e.message ?? e}` }; }
  const beacon = block.header.beacon ?? null;
  const verified = Boolean(beacon && beaconKey && verifyBeacon(beaconKey, genesis.chain_id, block.height, beacon));
  const t = await chain.transcript(MODULE, a.id);
  const bids = {};
  for (const s of t.steps) {
    if (s.call != null) continue;
    let body;
    try { body = JSON.parse(s.body); } catch { continue; }
    const act0 = body.action ?? {};
    const sender = act0.type === 'session_game' ? act0.account : body.from;
    if (act0.op?.kind !== 'bid' || typeof act0.op.sealed !== 'string') continue;
    bids[sender] = validBid(beacon ? openSealed(act0.op.sealed, beacon) : null, a);
  }
  const found = { height: block.height, beacon, verified, bids };
  openings.set(a.id, found);
  return found;
}

let shown = null;
async function drawAuction(a) {
  shown = a;
  const me = key.address;
  $('auction').hidden = false;
  $('auction-id').textContent = a.id;
  $('lot-line').textContent = `“${a.lot}” sold by ${who(a.seller)} · deposit ${gold(a.deposit)} GOLD · reserve ${gold(a.reserve)} GOLD · ${a.seats.length} seats`;
  const roundEl = $('round');
  const before = a.status === 'open' && canSendAt(head, a.round);
  if (before) roundEl.textContent = `Round ${a.round}: every bid opens in block ${a.round}, in ${a.round - head} blocks (now ${head}). A bid must land in a block before the round: this page hands one in only while the chain is below block ${a.round - 2}.`;
  else if (a.status === 'open') roundEl.textContent = `Round ${a.round}: bids are closed (the chain is at block ${head}: a bid sent now could land in block ${a.round}, which opens every bid first); block ${a.round} opens them.`;
  else roundEl.textContent = `Round ${a.round}: every bid was opened in block ${a.round}.`;
  roundEl.dataset.closed = before ? '0' : '1';
  roundEl.dataset.round = String(a.round);
  roundEl.dataset.left = String(Math.max(0, a.round - head));
  const list = $('seats-list');
  const items = a.seats.map((s, i) => seatItem(a, s, i));
  const drawn = items.map((li) => `${li.dataset.seat} ${li.textContent}`).join('\n');
  if (list.dataset.drawn !== drawn) { list.dataset.drawn = drawn; list.replaceChildren(...items); }
  const mySeat = a.seats.findIndex((s) => s.bidder === me);
  const free = a.seats.some((s) => !s.bidder);
  const canBid = before && a.seller !== me && mySeat < 0 && free && !!beaconKey;
  $('bid-form').hidden = !canBid;
  if (canBid) drawBidNote(a);
  $('add-form').hidden = !(before && a.seats.length < (info?.max_seats ?? 12));
  const own = myBid(a.id);
  $('sealed-info').textContent = mySeat >= 0 && !a.seats[mySeat].opened
    ? `Your bid${own ? ` (${gold(own)} GOLD)` : ''}: sealed in seat ${mySeat} (hidden until round ${a.round}).`
    : '';
  let turn = '';
  if (a.status === 'open') {
    if (a.seller === me) turn = before ? 'Your auction: bids come in sealed; nobody can read one before the round.' : 'Your auction: waiting for the round.';
    else if (mySeat >= 0) turn = 'Your bid is in: waiting for the round.';
    else if (!before) turn = 'Bids are closed.';
    else if (!free) turn = 'Every seat is taken: add one to bid.';
    else turn = 'Open: seal a bid to take a seat.';
  }
  $('turn').textContent = turn;
  const result = $('result');
  if (a.status === 'closed') {
    const voids = a.seats.filter((s) => s.bidder && s.bid === null).length;
    const forfeited = voids ? ` ${voids} void bid${voids === 1 ? '' : 's'}: ${gold(String(BigInt(a.deposit) * BigInt(voids)))} GOLD of deposits forfeited to the seller.` : '';
    result.textContent = a.winner
      ? `Sold to ${who(a.winner)} for ${gold(a.price)} GOLD: the seller got ${gold(a.price)} GOLD, the winner the rest of the deposit back, every other valid bidder the deposit.${forfeited}`
      : `Nothing sold (no valid bid).${forfeited || (a.seats.some((s) => s.bidder) ? '' : ' Nobody bid.')}`;
    const link = document.createElement('a');
    link.id = 'verify-link';
    link.href = `/verify/?module=${MODULE}&id=${encodeURIComponent(a.id)}`;
    link.textContent = 'Verify this auction';
    result.append(' ', link);
  } else {
    result.textContent = '';
  }
  const el = $('opening');
  if (a.status === 'closed' && a.seats.some((s) => s.bidder)) {
    const r = await checkOpenings(a);
    if (shown !== a) return;
    if (r.error) { el.textContent = r.error; delete el.dataset.verified; return; }
    const taken = a.seats.filter((s) => s.bidder);
    const same = taken.every((s) => (r.bids[s.bidder] ?? null) === (s.bid ?? null));
    el.textContent = `${taken.length} sealed bid${taken.length === 1 ? '' : 's'} opened in this browser with the beacon of block ${r.height} (${shortHex(r.beacon)}): `
      + (r.verified ? 'beacon verified under the genesis key' : 'the beacon does NOT verify under the genesis key')
      + (same ? '; every bid is what the chain opened.' : '; the bids are NOT what the chain says it opened.');
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
      const ids = mineIds();
      const [acct, open, mine, a, proven] = await Promise.allSettled([
        chain.account(key.address),
        info ? chain.game(MODULE, { open: '1' }) : { auctions: [] },
        info ? Promise.all(ids.map((id) => chain.game(MODULE, { id }).catch(() => null))) : [],
        current && info ? chain.game(MODULE, { id: current }).catch((e) => (e.code === 'not_found' ? null : Promise.reject(e))) : null,
        provenBalance({ chain, getStateProven, genesis, status, address: key.address }),
      ]);
      const failed = [acct, open, mine, a].find((r) => r.status === 'rejected');
      if (failed) {
        const e = failed.reason;
        showError(e instanceof ChainError ? `${e.code}: ${e.message}` : String(e?.message ?? e));
      }
      if (acct.status === 'fulfilled') $('balance').textContent = gold(acct.value.balances.GOLD);
      showProvenBalance(proven, gold);
      if (open.status === 'fulfilled') {
        showList($('open-list'), open.value.auctions.map(auctionLine));
        $('open-empty').hidden = open.value.auctions.length > 0;
      }
      if (mine.status === 'fulfilled') showList($('my-list'), mine.value.filter(Boolean).map(auctionLine));
      if (a.status === 'fulfilled') {
        if (a.value) await drawAuction(a.value);
        else if (current) { shown = null; $('auction').hidden = false; $('turn').textContent = `No auction ${current} (yet).`; }
        else { shown = null; $('auction').hidden = true; }
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
  if (!current) $('auction').hidden = true;
  refresh();
}
window.addEventListener('hashchange', openFromHash);

chain.subscribeGame(MODULE, () => refresh(), {
  // An open auction is redrawn on each head (the countdown); from its round on, read again until
  // the openings' and the close's events came.
  onHead: (h) => {
    head = h.height;
    showHeight(head);
    if (shown && shown.status === 'open') {
      if (head >= shown.round) refresh();
      else drawAuction(shown);
    }
  },
  ...liveStatus,
});
openFromHash();
document.body.dataset.ready = '1';
