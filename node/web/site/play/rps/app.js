// app.js: /play/rps/: rock-paper-scissors played off-chain (docs/channels.md) with the SDK's
// Channel and Rps: the key in this browser (localStorage, as the other play pages), faucet, the
// open offers of `rps_rules` (live), offer with a stake (0: unstaked) and a window in minutes of
// block time, join (only offers pinned to a genesis module's rules code: any other code is not
// joined, the page showing the SDK's refusal), cancel; then a commit (a fresh salt kept in localStorage before it is signed),
// sent through the node's move relay when the opponent is connected to it (the page's relay
// connection is its seat's: the SDK signs its hello with the key kept here), else the move board;
// the reveal made by itself once both commits are seen, the result from the rules .wasm (the code
// pinned at the offer) running here, settle by history, withdraw once the window has passed (the
// time left shown, by the newest block's time), challenge / answer / forfeit when a player stalls,
// and the proof when the opponent signed two moves for one position; a move signed here whose
// post failed is sent again by itself. `#<game id>` opens a game. Says so when channel, moveboard
// or rps_rules is not on the node. Offers (the lobby's and the one shown) are read through the
// channel module's generated typed client (/clients/channel.js: checked against the schema,
// amounts as bigint); the game itself runs on the SDK's Channel. The markup the play pages share
// (header, key panel, lists) is common/play-page.js's.
import { loadSdk, loadClient, gold, toUnits, $ } from '/common/sdk-loader.js';
import { playerKey } from '/common/player-key.js';
import {
  fillPlayPage, showError, say, short, showHeight, liveStatus, faucetButton, provenBalance, showProvenBalance,
} from '/common/play-page.js';

const GAMES_STORAGE = 'gamechain.rps.games';
const NEEDED = ['channel', 'moveboard', 'rps_rules'];
const RULES = 'rps_rules';

fillPlayPage({ page: 'rps', noun: 'offers', more: false });
const [sdk, channelClient] = await Promise.all([loadSdk(), loadClient('channel')]);
const { Chain, Key, ChainError, Channel, Rps, RPS_CHOICES, rulesCodeRefusal, getStateProven } = sdk;
const chain = new Chain(location.origin);
const [status, genesis, latest] = await Promise.all([chain.status(), chain.genesis(), chain.block('latest')]);
let head = status.height;
let headTime = latest.header.time_ms; // the newest block's time: what deadlines are judged by
let key = null; // the player's key (player-key.js), set below once the page can redraw
let current = null; // the game (offer) id shown
let ch = null; // its Channel once the game is open
let rps = null;
let sub = null; // ch's move board subscription
let busy = false;
let deployed = false;
let offerCount = 0;
let lobbyStale = true;
let moduleList = null; // the node's modules (`GET /v1/modules`), read once per redraw
const tried = new Set(); // automatic steps tried once each

/** This browser's games: `{id: {from: height}}` (the block to read moves from). */
function myGames() {
  try { return JSON.parse(localStorage.getItem(GAMES_STORAGE) ?? '{}') ?? {}; } catch { return {}; }
}
function rememberGame(id, from) {
  const all = myGames();
  all[id] = { from: all[id]?.from ?? from, key: key.address };
  localStorage.setItem(GAMES_STORAGE, JSON.stringify(all));
}

// The last steps of the move feed, for a bug report (and the browser tests' failure messages):
// games opened, blocks read, moves applied or refused, feed errors.
const trace = [];
window.__trace = trace;
function note(text) {
  trace.push(`@${head} ${text}`);
  if (trace.length > 60) trace.shift();
}

const who = (a) => (a === key.address ? 'you' : short(a));
/** A span of block time for people: "4 min 59 s", "2 h 5 min", "1 d 3 h". */
function span(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s >= 86400) return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}
const left = (deadlineMs) => span(deadlineMs - headTime);
const errText = (label, e) => (e instanceof ChainError || e?.name === 'ChannelError' ? `${label}: ${e.code}: ${e.message}` : `${label}: ${e?.message ?? e}`);

/** Runs one action (sends, waits for its receipt); shows what went wrong; redraws. */
async function act(label, fn) {
  if (busy) return null;
  busy = true;
  showError('');
  say(`${label}…`);
  document.body.dataset.busy = '1';
  try {
    const out = await fn();
    say(`${label}: done${out && out.height ? ` at height ${out.height}` : out && out.receipt ? ` at height ${out.receipt.height}` : out && out.via === 'relay' ? ' (through the relay)' : ''}`);
    return out;
  } catch (e) {
    showError(e?.code === 'refused' ? e.message : errText(label, e));
    say('');
    return null;
  } finally {
    busy = false;
    delete document.body.dataset.busy;
    refresh();
  }
}

// Key, faucet.
faucetButton(genesis, () => act('faucet', async () => {
  const r = await chain.waitForReceipt(await chain.send(key, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 90000 });
  if (!r.ok) throw new Error(`refused: ${r.error}`);
  return r;
}));
key = playerKey({
  Key, network: status.network, $, showError,
  onChange: (k) => { key = k; openFromHash(); },
  replaceWarning: 'Replace this key with a new one? Export it first if it holds GOLD or plays a game.',
});

// The lobby.
$('create-btn').onclick = () => {
  let stake;
  let window;
  try {
    stake = toUnits($('stake').value);
    const minutes = Number($('window').value);
    if (!Number.isFinite(minutes) || minutes < 5 || minutes > 4320) throw new Error('the window must be 5 to 4,320 minutes (3 days)');
    window = Math.round(minutes * 60000);
  } catch (e) { showError(e.message); return; }
  act('offer', async () => {
    const { id, receipt } = await Channel.offer(chain, key, { rules: RULES, stake, windowMs: window });
    rememberGame(id, receipt.height);
    lobbyStale = true;
    location.hash = id;
    return receipt;
  });
};
$('join-btn').onclick = () => current && act('join', async () => {
  const { receipt } = await Channel.join(chain, key, current);
  rememberGame(current, receipt.height);
  lobbyStale = true;
  return receipt;
});
$('cancel-btn').onclick = () => current && act('cancel', async () => {
  const r = await Channel.cancel(chain, key, current);
  lobbyStale = true;
  return r;
});

// The game.
for (const [i, name] of RPS_CHOICES.entries()) {
  $(name).onclick = () => rps && act(`commit ${name}`, () => rps.commit(i));
}
$('settle-btn').onclick = () => ch && act('settle', () => ch.settle());
$('withdraw-btn').onclick = () => ch && act('withdraw', () => ch.withdraw());
$('challenge-btn').onclick = () => ch && act('challenge', () => ch.challenge());
$('respond-btn').onclick = () => ch && act('respond', () => ch.respond());
$('forfeit-btn').onclick = () => ch && act('claim the forfeit', () => ch.claimForfeit());
$('equivocation-btn').onclick = () => ch && act('prove the equivocation', () => ch.proveEquivocation());

function offerLine(o) {
  const li = document.createElement('li');
  const a = document.createElement('a');
  a.href = `#${o.id}`;
  a.textContent = o.id;
  li.append(a, ` ${o.status} · ${o.stake === 0n ? 'unstaked' : `stake ${gold(o.stake)} GOLD`} · window ${span(o.window_ms)} · by ${who(o.creator)}`);
  li.dataset.id = o.id;
  return li;
}

async function drawLobby() {
  if (!lobbyStale) return;
  lobbyStale = false;
  offerCount = await Channel.offerCount(chain, { hint: offerCount });
  // Each offer read through the channel's typed client: one that breaks the schema is left out.
  const read = (offer) => channelClient.viewOffer(chain, { offer });
  const { offers } = await Channel.offers(chain, { rules: RULES, status: 'open', count: offerCount, scan: 20, read });
  $('open-list').replaceChildren(...offers.map(offerLine));
  $('open-empty').hidden = offers.length > 0;
  const mine = Object.entries(myGames()).filter(([, g]) => g.key === key.address).map(([id]) => id).reverse().slice(0, 20);
  $('my-list').replaceChildren(...mine.map((id) => {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = `#${id}`;
    a.textContent = id;
    li.append(a);
    li.dataset.id = id;
    return li;
  }));
}

/** Opens the Channel of the current game once it exists (the offer is filled). */
async function ensureChannel() {
  if (ch && ch.game === current && ch.key === key) return ch;
  if (sub) { sub.close(); sub = null; }
  ch = null;
  rps = null;
  const c = await Channel.open(chain, key, current, { fromHeight: myGames()[current]?.from });
  if (current !== c.game || key !== c.key) return null;
  ch = c;
  rps = new Rps(c);
  const g = c.game.slice(-4);
  note(`open ${g}: ${c.n} moves, read from ${c.saved.lastHeight ?? c.saved.fromHeight}`);
  let s;
  try {
    s = await c.listen({
      onMove: (r) => { note(`${g} move ${r.move?.n ?? '?'} ${r.status}${r.via ? ` via ${r.via}` : ''}`); refresh(); },
      onPeers: (n) => { note(`${g} relay peers ${n}`); refresh(); },
      onRefused: (r) => { note(`${g} refused: ${r.error.code}`); say(`a move refused: ${r.error.code}: ${r.error.message}`); },
      onBlock: (b) => { if (b.txs?.length) note(`${g} read ${b.height}`); },
      onError: (e) => note(`${g} feed: ${e?.code ?? ''} ${e?.message ?? e}`),
    });
  } catch (e) {
    // No move feed: drop the game so the next pass opens it again, rather than show it frozen.
    if (ch === c) { ch = null; rps = null; }
    throw e;
  }
  // The page left this game while the subscription was being opened: it must not outlive it.
  if (ch !== c) { s.close(); note(`close ${g}`); return null; }
  sub = s;
  return ch;
}


function resultText(c, rec) {
  const [c0, c1] = rps.result().choices;
  const seat = c.seat;
  const name = (x) => (x === null ? '?' : RPS_CHOICES[x]);
  if (rec.outcome && rec.outcome.how !== 'history') {
    const w = rec.outcome.winner;
    const won = w === seat;
    // Said from this player's side: the loser is the one who did not answer / signed twice.
    const how = rec.outcome.how === 'forfeit'
      ? `by forfeit (${seat === null ? `seat ${w === null ? '?' : 1 - w}` : won ? 'the opponent' : 'you'} did not answer a challenge in time)`
      : rec.outcome.how === 'equivocation'
        ? `by equivocation (${seat === null ? `seat ${w === null ? '?' : 1 - w}'s key` : won ? 'the opponent\'s key' : 'your key'} signed two different moves for one position)`
        : `(${rec.outcome.how})`;
    if (w === null || w === undefined) return `Draw ${how}.`;
    if (seat === null) return `Seat ${w} won ${how}.`;
    return `${won ? 'You won' : 'You lost'} ${how}.`;
  }
  if (!c.over) return '';
  if (seat === null) return `${name(c0)} against ${name(c1)}: ${c.winner === null ? 'a draw' : `seat ${c.winner} wins`}.`;
  const mine = seat === 0 ? c0 : c1;
  const theirs = seat === 0 ? c1 : c0;
  if (c.winner === null) return `Draw: both chose ${name(mine)}.`;
  return c.winner === seat ? `You won: ${name(mine)} beats ${name(theirs)}.` : `You lost: ${name(theirs)} beats ${name(mine)}.`;
}

function drawGame(c, rec) {
  const seat = c.seat;
  const opp = seat === null ? null : rec.players[1 - seat];
  const stakeText = rec.stake === '0' ? 'unstaked' : `stake ${gold(rec.stake)} GOLD each`;
  $('players').textContent = seat === null
    ? `Players ${short(rec.players[0])} and ${short(rec.players[1])} · ${stakeText} · window ${span(rec.window_ms)}`
    : `You are seat ${seat} (${seat === 0 ? 'the offer\'s creator' : 'the joiner'}) against ${short(opp)} · ${stakeText} · window ${span(rec.window_ms)}`;
  const relay = c.relay;
  $('transport').textContent = seat === null ? ''
    : relay && relay.open && relay.peers > 0 ? 'Moves go through the node\'s relay: the opponent is connected.'
      : relay && relay.open ? 'Moves go through the move board: the opponent is not on the relay now.'
        : 'Moves go through the move board: the relay is not connected.';
  const playing = rec.status === 'open' || rec.status === 'challenged';
  const canCommit = playing && rps.phase === 'commit' && c.myTurn;
  for (const name of RPS_CHOICES) $(name).disabled = !canCommit || busy;
  const mine = rps.myChoice;
  let turn = '';
  if (rec.status === 'settled' || rec.status === 'concluding' || c.over) turn = 'The game is over.';
  else if (seat === null) turn = `Move ${c.n}: seat ${c.due} to play.`;
  else if (rps.phase === 'commit') {
    turn = c.myTurn ? 'Your turn: choose rock, paper or scissors.'
      : `${mine !== null ? `You chose ${RPS_CHOICES[mine]}. ` : ''}Waiting for the opponent's choice.`;
  } else turn = c.myTurn ? 'Both have chosen: revealing yours…' : 'Both have chosen: waiting for the opponent\'s reveal.';
  $('turn').textContent = turn;
  $('moves').textContent = `${c.n} of 4 signed moves (${['no commit yet', 'seat 0 committed', 'both committed', 'seat 0 revealed', 'both revealed'][Math.min(c.n, 4)]}) · state ${c.stateHash.slice(0, 12)}…`;
  $('result').textContent = resultText(c, rec);

  // After a challenge's deadline the forfeit stands: the chain refuses a settle then.
  const deadlinePassed = rec.status === 'challenged' && rec.challenge && headTime > rec.challenge.deadline_ms;
  $('settle-btn').hidden = !(c.over && playing && !deadlinePassed);
  const outcome = rec.outcome;
  const unstaked = rec.stake === '0';
  $('withdraw-btn').hidden = !(outcome && !rec.paid && !unstaked);
  const final = outcome && (rec.final || rec.status === 'settled' || headTime >= outcome.final_at_ms);
  $('withdraw-btn').disabled = !final;
  let w = '';
  if (outcome) {
    const pot = gold(String(BigInt(rec.stake) * 2n));
    const to = outcome.winner === null ? `each player gets ${gold(rec.stake)} GOLD back` : `${pot} GOLD to ${outcome.winner === seat ? 'you' : seat === null ? `seat ${outcome.winner}` : 'the opponent'}`;
    if (unstaked) w = final ? 'Final (unstaked: the result is recorded, nothing is paid).' : `Settled by ${outcome.how}: final in ${left(outcome.final_at_ms)} (unstaked: nothing is paid).`;
    else if (rec.paid) w = `Paid out: ${to}.`;
    else if (final) w = `Final: withdraw now (${to}).`;
    else w = `Settled by ${outcome.how}: final in ${left(outcome.final_at_ms)} of block time; then withdraw (${to}).`;
  } else if (c.over && playing && !deadlinePassed) w = 'Settle to collect: the result is final one window after it is settled.';
  $('withdraw-info').textContent = w;

  const chal = rec.challenge;
  $('challenge-btn').hidden = !(rec.status === 'open' && !c.over && seat !== null && !c.myTurn);
  $('respond-btn').hidden = !(rec.status === 'challenged' && chal && chal.due === seat && c.n > chal.moves);
  $('forfeit-btn').hidden = !(rec.status === 'challenged' && chal && chal.due !== seat && seat !== null);
  $('forfeit-btn').disabled = !(chal && headTime > chal.deadline_ms);
  let ci = '';
  if (rec.status === 'challenged' && chal) {
    if (chal.due === seat && headTime > chal.deadline_ms) ci = 'You were challenged and the deadline passed: the opponent can claim the forfeit.';
    else if (chal.due === seat) ci = `You are challenged: move ${chal.moves} is yours, within ${left(chal.deadline_ms)} of block time, or you lose by forfeit.`;
    else if (headTime > chal.deadline_ms) ci = 'The deadline passed without an answer: claim the forfeit.';
    else ci = `Challenged: the opponent must answer within ${left(chal.deadline_ms)} of block time; after that the forfeit can be claimed.`;
  } else if (rec.status === 'open' && !c.over && seat !== null && !c.myTurn) {
    ci = `If the opponent stalls, challenge: they then have ${span(rec.window_ms)} of block time to move.`;
  }
  // Two moves signed by one seat for one position (seen by `receive`): that seat loses.
  const provable = c.evidence && c.evidence.seat !== seat && (playing || (rec.status === 'concluding' && !final));
  $('equivocation-btn').hidden = !provable;
  if (provable) ci = `The opponent signed two different moves for move ${c.evidence.a.n}: prove it and win. ${ci}`;
  $('challenge-info').textContent = ci;
}

/** The automatic steps: reveal once both commits are seen; answer a challenge with moves made. */
function autoStep(c, rec) {
  if (busy || c.seat === null || !(rec.status === 'open' || rec.status === 'challenged')) return;
  const mark = (what) => { const k = `${c.game}:${what}:${c.n}:${rec.challenge?.deadline_ms ?? ''}`; if (tried.has(k)) return false; tried.add(k); return true; };
  const unposted = c.unposted();
  if (unposted && !c.myTurn && mark(`resend:${Math.floor(head / 3)}`)) {
    // A move signed here whose post never reached the node (a failed send, a reload between
    // signing and sending): the opponent cannot see it; send it again (every few blocks).
    act(`send move ${unposted.n} again`, () => c.resend());
  } else if (rps.phase === 'reveal' && c.myTurn && rps.myChoice !== null && mark('reveal')) {
    act('reveal', () => rps.reveal());
  } else if (rec.status === 'challenged' && rec.challenge?.due === c.seat && c.n > rec.challenge.moves && mark('respond')) {
    act('answer the challenge', () => c.respond());
  }
}

function hideGameControls() {
  for (const id of ['settle-btn', 'withdraw-btn', 'challenge-btn', 'respond-btn', 'forfeit-btn', 'equivocation-btn', 'join-btn', 'cancel-btn']) $(id).hidden = true;
  for (const name of RPS_CHOICES) $(name).disabled = true;
  for (const id of ['moves', 'result', 'withdraw-info', 'challenge-info', 'players', 'transport']) $(id).textContent = '';
}

async function drawCurrent() {
  if (!current) { $('game').hidden = true; return; }
  // The game this pass draws: if the page opens another meanwhile, nothing read for this one is
  // drawn (the pass the switch asks for draws the other).
  const id = current;
  $('game').hidden = false;
  $('game-id').textContent = id;
  let offer;
  try {
    offer = await channelClient.viewOffer(chain, { offer: id });
  } catch (e) {
    if (current !== id) return;
    if (e instanceof ChainError && e.code === 'not_found') {
      hideGameControls();
      $('turn').textContent = `No offer ${id} (yet).`;
      return;
    }
    throw e;
  }
  if (current !== id) return;
  // The game runs the code the offer pinned: an open offer is joined only when that is a genesis
  // module's code (the SDK's rule, docs/channels.md "Rules that trap when their author loses");
  // any other code is not joined here, and the page says why in the SDK's words.
  const refusal = offer.status === 'open' && offer.creator !== key.address
    ? await rulesCodeRefusal(chain, offer.rules_code, { offer: id, rules: offer.rules, modules: moduleList ?? undefined })
    : null;
  if (current !== id) return;
  if (refusal) {
    hideGameControls();
    $('turn').textContent = `Not joining: ${refusal}`;
    return;
  }
  if (offer.rules !== RULES) {
    hideGameControls();
    $('turn').textContent = `Offer ${current} is for ${offer.rules}, not rock-paper-scissors.`;
    return;
  }
  if (offer.status !== 'filled') {
    hideGameControls();
    $('players').textContent = `Offered by ${who(offer.creator)} · ${offer.stake === 0n ? 'unstaked' : `stake ${gold(offer.stake)} GOLD each`} · window ${span(offer.window_ms)}`;
    $('turn').textContent = offer.status === 'cancelled' ? `Cancelled: ${gold(offer.stake)} GOLD went back to ${who(offer.creator)}.`
      : offer.creator === key.address ? 'Waiting for an opponent to join.' : 'Open: join to play.';
    $('join-btn').hidden = !(offer.status === 'open' && offer.creator !== key.address);
    $('cancel-btn').hidden = !(offer.status === 'open' && offer.creator === key.address);
    return;
  }
  $('join-btn').hidden = true;
  $('cancel-btn').hidden = true;
  const c = await ensureChannel();
  if (!c) return;
  const rec = await c.refresh();
  // The hash or the key may have changed while the record was read (that change closed `c` and
  // asked for another redraw, which draws the game shown now): draw nothing of `c`.
  if (ch !== c) return;
  drawGame(c, rec);
  autoStep(c, rec);
}

// Redraws: everything, once per block (a redraw asked for while one runs is done after it).
let refreshing = false;
let again = false;
async function refresh() {
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    do {
      again = false;
      const proof = Promise.allSettled([provenBalance({ chain, getStateProven, genesis, status, address: key.address })]);
      const [acct, mods] = await Promise.all([chain.account(key.address), chain.modules()]);
      $('balance').textContent = gold(acct.balances.GOLD);
      showProvenBalance((await proof)[0], gold);
      moduleList = mods.modules;
      const ids = new Set(mods.modules.map((m) => m.id));
      const missing = NEEDED.filter((id) => !ids.has(id));
      deployed = missing.length === 0;
      $('missing').hidden = deployed;
      $('missing').textContent = deployed ? '' : `This node does not run ${missing.map((m) => `\`${m}\``).join(', ')}: rock-paper-scissors needs the modules channel, moveboard and rps_rules deployed under those ids (docs/channels.md, "Deploy and open a game"). Nothing can be played here until they are.`;
      for (const id of ['create', 'lobby', 'mine']) $(id).hidden = !deployed;
      if (deployed) {
        await drawLobby();
        await drawCurrent();
      } else $('game').hidden = true;
      showHeight(head);
    } while (again);
  } catch (e) {
    showError(errText('refresh', e));
  } finally {
    refreshing = false;
    // A redraw asked for during a pass that failed still runs (a game switch, a new block).
    if (again) {
      again = false;
      setTimeout(refresh, 0);
    }
  }
}

/** The game id and key drawn last (a switch clears the game's controls at once). */
let shown;
let shownKey;

function openFromHash() {
  let id = '';
  try { id = decodeURIComponent(location.hash.slice(1)); } catch { /* malformed: no game */ }
  current = /^[0-9a-f]{16}$/.test(id) ? id : null;
  if (!current || (ch && (ch.game !== current || ch.key !== key))) {
    if (sub) { sub.close(); sub = null; note(`close ${ch?.game.slice(-4)}`); }
    ch = null;
    rps = null;
  }
  // Another game (or key): nothing of the game drawn before stays on screen under the new id,
  // above all not its enabled buttons (a click there would do nothing while the new game loads).
  if (current !== shown || key !== shownKey) {
    shown = current;
    shownKey = key;
    hideGameControls();
    $('game-id').textContent = current ?? '';
    $('turn').textContent = current ? 'Loading the game…' : '';
  }
  showError('');
  refresh();
}
window.addEventListener('hashchange', openFromHash);

chain.subscribe((block) => {
  head = block.height;
  if (Number.isSafeInteger(block.header?.time_ms)) headTime = Math.max(headTime, block.header.time_ms);
  if ((block.txs ?? []).some((t) => typeof t.body === 'string' && t.body.includes('"game":"channel"'))) lobbyStale = true;
  refresh();
}, liveStatus);
openFromHash();
document.body.dataset.ready = '1';
