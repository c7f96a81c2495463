// app.js of /verify/: fetches a game's transcript (GET /v1/games/<module>/<id>/transcript), its
// module's wasm by code hash (checked by Chain.code) and this node's genesis (the block signer,
// chain id, beacon key and fuel_apply the transcript must match), runs the SDK's verifyTranscript
// (every op and every scheduled call re-executed in a Worker of this page, every block beacon
// checked under the genesis beacon key), and shows any module's steps as a table (height, tx or
// call, sender, op or call id, receipt, events, beacon) with ✓, or the first divergence in red.
// Tic-tac-toe and m,n,k games also get their board; a dice duel its dice, the block that rolled
// them, its beacon and whether the dice are that beacon's draws. A game with sealed moves
// (sealed_rps, auction: any module whose calls emit `<module>.opened`) gets the list of the
// openings the re-execution made (each envelope re-opened with its round block's beacon), and its
// ops show an envelope shortened. A transcript file can be checked the same way (the file input).
// `body[data-done]` is set when a check ends.
import { loadSdk, gold } from '../common/sdk-loader.js';

const $ = (id) => document.getElementById(id);
/** Largest transcript read, from the node or a file. */
const MAX_TRANSCRIPT_BYTES = 24 << 20;
const short = (a) => (a ? `${a.slice(0, 6)}…${a.slice(-4)}` : '');
const FACES = ['⚀', '⚁', '⚂', '⚃', '⚄', '⚅'];
/** Longest text shown for an op or an event's data. */
const SHOW_CHARS = 160;
const clip = (text) => (text.length > SHOW_CHARS ? `${text.slice(0, SHOW_CHARS)}…` : text);

const { Chain, verifyTranscript, drawer } = await loadSdk();
const chain = new Chain(location.origin);
const params = new URLSearchParams(location.search);
// The game asked for in the address; a transcript file without one is checked as the game it
// names (shown once read).
const asked = { module: params.get('module') ?? undefined, id: params.get('id') ?? undefined };
const module = asked.module ?? 'tictactoe';
const id = asked.id ?? '';
$('game').textContent = asked.id ? `${module}:${id}` : '';
document.body.dataset.ready = '1';

/**
 * The board after the verified steps (tic-tac-toe's 3×3, m,n,k's rows×cols): the `board` of the
 * last `<module>.moved` event, which the re-execution produced itself, never a count of ops.
 */
function drawBoard(t, steps) {
  const board = $('board');
  board.hidden = true;
  board.replaceChildren();
  if (t.module !== 'tictactoe' && t.module !== 'mnk') return;
  let rows = 3;
  let cols = 3;
  const events = steps.flatMap((s) => s.events);
  const data = events.find((e) => e.kind === `${t.module}.created`)?.data;
  if (t.module === 'mnk' && data) { rows = data.rows; cols = data.cols; }
  if (!(Number.isInteger(rows) && Number.isInteger(cols) && rows >= 1 && rows <= 19 && cols >= 1 && cols <= 19)) return;
  const moved = events.filter((e) => e.kind === `${t.module}.moved`).at(-1)?.data?.board;
  const marks = typeof moved === 'string' && moved.length === rows * cols ? moved : '.'.repeat(rows * cols);
  const cells = [...marks].map((c) => (c === 'x' || c === 'o' ? c : ''));
  board.hidden = false;
  board.style.gridTemplateColumns = `repeat(${cols}, auto)`;
  board.classList.toggle('small', cols > 9);
  board.replaceChildren(...cells.map((c, i) => {
    const b = document.createElement('button');
    b.textContent = c;
    b.className = c;
    b.disabled = true;
    b.dataset.cell = String(i);
    return b;
  }));
}

/** A player's two dice as faces. */
function faces(el, mark, dice) {
  el.replaceChildren(...dice.map((d) => {
    const s = document.createElement('span');
    s.className = `die ${mark}`;
    s.textContent = FACES[d - 1] ?? '?';
    s.title = String(d);
    s.dataset.value = String(d);
    return s;
  }));
}

/**
 * A dice duel's roll, from the verified steps only: the call step that emitted `dice.rolled`, its
 * block, its beacon (checked under the genesis key by verifyTranscript) and the dice, which are
 * recomputed here from the beacon's draws too.
 */
function drawDice(t, steps) {
  const view = $('dice-view');
  view.hidden = true;
  delete view.dataset.verified;
  if (t.module !== 'dice') return;
  const step = steps.find((s) => s.type === 'call' && s.events.some((e) => e.kind === 'dice.rolled'));
  const rolled = step?.events.find((e) => e.kind === 'dice.rolled')?.data;
  const ok = (d) => Array.isArray(d) && d.length === 2 && d.every((v) => Number.isInteger(v) && v >= 1 && v <= 6);
  if (!step || !ok(rolled?.x_dice) || !ok(rolled?.o_dice)) return;
  view.hidden = false;
  faces($('x-dice'), 'x', rolled.x_dice);
  faces($('o-dice'), 'o', rolled.o_dice);
  $('x-total').textContent = `= ${rolled.x_dice[0] + rolled.x_dice[1]}`;
  $('o-total').textContent = `= ${rolled.o_dice[0] + rolled.o_dice[1]}`;
  let draws = null;
  if (step.beacon) {
    const d = drawer(step.beacon, t.module, step.call.id);
    draws = [1 + d.below(6), 1 + d.below(6), 1 + d.below(6), 1 + d.below(6)];
  }
  const same = draws !== null && draws.join(',') === [...rolled.x_dice, ...rolled.o_dice].join(',');
  const p = $('roll-beacon');
  p.textContent = `Rolled by scheduled call #${step.call.id} in block ${step.height}, from its beacon ${short(step.beacon)}: `
    + (step.beaconVerified ? 'beacon verified under the genesis key' : 'beacon NOT verified')
    + (same ? '; the dice are its draws.' : '; the dice are NOT its draws.');
  p.title = step.beacon ?? '';
  p.className = step.beaconVerified && same ? 'ok' : 'fail';
  view.dataset.verified = step.beaconVerified && same ? '1' : '0';
  view.dataset.height = String(step.height);
}

/** A seat's opening as words: sealed_rps's `{seat, move}`, the auction's `{seat, bidder, bid}`. */
function openingText(d) {
  if (!d || typeof d !== 'object') return String(d);
  if (typeof d.move === 'string') return `${d.seat} ${d.move}`;
  if ('bid' in d) {
    const who = d.bidder ? ` (${short(d.bidder)})` : ' (nobody)';
    return `seat ${d.seat}${who}: ${d.bid === null ? (d.bidder ? 'void' : 'empty') : `bid ${gold(d.bid)} GOLD`}`;
  }
  const { id: _id, ...rest } = d;
  return JSON.stringify(rest);
}

/**
 * The openings of sealed moves, from the verified steps only: every call step's
 * `<module>.opened` events (what the re-execution opened with the step's beacon and found equal to
 * the receipt), with their block and whether its beacon verified.
 */
function drawSealed(t, steps) {
  const view = $('sealed-view');
  view.hidden = true;
  delete view.dataset.verified;
  const items = [];
  let verified = true;
  for (const s of steps) {
    if (s.type !== 'call') continue;
    for (const e of s.events) {
      if (e.kind !== `${t.module}.opened`) continue;
      verified &&= s.beaconVerified;
      const li = document.createElement('li');
      li.textContent = `${openingText(e.data)} · opened by call #${s.call.id} in block ${s.height}, beacon ${short(s.beacon)} ${s.beaconVerified ? '✓ verified under the genesis key' : '✗ not verified'}`;
      li.className = s.beaconVerified ? 'ok' : 'fail';
      items.push(li);
    }
  }
  if (!items.length) return;
  view.hidden = false;
  $('sealed-openings').replaceChildren(...items);
  view.dataset.verified = verified ? '1' : '0';
}

/** An op as text, a sealed envelope (448 hex characters) shortened. */
function opText(op) {
  return JSON.stringify(op, (k, v) => (k === 'sealed' && typeof v === 'string' && v.length > 24 ? `${v.slice(0, 12)}…(${v.length / 2} bytes)` : v));
}

function cell(text, cls) {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

/** One verified step as a table row. */
function stepRow(s) {
  const tr = document.createElement('tr');
  tr.dataset.ok = '1';
  tr.dataset.kind = s.type;
  tr.className = 'ok';
  const what = s.type === 'call' ? `call #${s.call.id}` : clip(opText(s.op));
  const events = cell('');
  for (const e of s.events) {
    const div = document.createElement('div');
    div.textContent = clip(`${e.kind} ${JSON.stringify(e.data)}`);
    events.append(div);
  }
  const beacon = cell(s.beacon ? `${s.beaconVerified ? '✓' : '✗'} ${short(s.beacon)}` : '—', 'mono');
  beacon.title = s.beacon ? `${s.beacon}${s.beaconVerified ? ' (verified under the genesis key)' : ''}` : 'no beacon';
  tr.append(cell('✓'), cell(String(s.index)), cell(String(s.height)), cell(s.type, s.type), cell(s.sender ? short(s.sender) : '— (the chain)', 'mono'),
    cell(what, 'mono'), cell(s.error ? `error: ${s.error}` : 'ok'), events, beacon);
  return tr;
}

async function check(transcript, bytes, source) {
  delete document.body.dataset.done;
  $('status').textContent = 'Verifying…';
  $('divergence').textContent = '';
  $('steps').replaceChildren();
  $('board').hidden = true;
  $('dice-view').hidden = true;
  $('sealed-view').hidden = true;
  try {
    const genesis = await chain.genesis();
    // The genesis hash of this node's chain (the same trust as its genesis): a transcript of
    // another chain with the same keys and chain id (a relaunch) names another one.
    const { genesis_hash: genesisHash } = await chain.status();
    const wasm = await chain.code(transcript.code_hash);
    // A chain with validators: a header is signed by the validator that proposed it, and each
    // step's block must be proven final by a quorum of the genesis set (its certificate).
    const signers = genesis.validators ? genesis.validators.set.map((v) => v.address) : undefined;
    const validators = genesis.validators ?? null;
    // The game checked: the one in the address (its module tictactoe unless named), else, for
    // a file on a bare /verify/, the one the file names, said so on the page.
    const want = asked.id ? { module, game: id } : { module: String(transcript.module), game: String(transcript.game) };
    $('game').textContent = `${want.module}:${want.game}${asked.id ? '' : ' (as the file names it)'}`;
    const r = await verifyTranscript(transcript, wasm, {
      sequencer: genesis.sequencer, signers, validators, chainId: genesis.chain_id, genesisHash, genesisModules: genesis.modules,
      beaconKey: genesis.beacon?.public_key ?? null, fuelApply: genesis.fuel_apply, stateCommitment: genesis.state_commitment ?? null, ...want,
    });
    const rows = r.steps.map(stepRow);
    if (r.divergence) {
      const d = r.divergence;
      if (d.index !== null) {
        const tr = document.createElement('tr');
        tr.dataset.ok = '0';
        tr.className = 'fail';
        const s = transcript.steps[d.index];
        tr.append(cell('✗'), cell(String(d.index)), cell(String(s?.height ?? '')), cell(d.call !== null ? 'call' : 'tx'), cell(''), cell(d.call !== null ? `call #${d.call}` : ''), cell(d.field));
        rows.push(tr);
      }
      const where = d.index === null ? '' : ` at step ${d.index} (${d.call !== null ? `call ${d.call}` : `tx ${d.txid}`})`;
      $('divergence').textContent = `Divergence${where}: ${d.field}. Expected ${d.expected}; got ${d.got}.`;
    }
    $('steps').replaceChildren(...rows);
    drawBoard(transcript, r.steps);
    drawDice(transcript, r.steps);
    drawSealed(transcript, r.steps);
    const beacons = (r.beaconKey ? ` ${r.beaconsVerified} block beacon${r.beaconsVerified === 1 ? '' : 's'} verified under the genesis key.` : '')
      + (r.finalityVerified !== null ? ` Finality: every step's block proven final by a quorum of the ${validators.set.length} genesis validators (${r.finalityVerified} certificate${r.finalityVerified === 1 ? '' : 's'} checked).` : '')
      + (r.completeAsOf !== null && r.completeAsOf !== undefined ? ` Complete: proven — the chain's own log of the game at block ${r.completeAsOf} holds exactly these ${r.steps.length} steps (a state proof against that block's signed state root).` : '')
      + (Array.isArray(r.startUnproven) ? (r.startUnproven.length === 0
        ? ' Starting balances: proven — each player\'s GOLD against the state root of the block before its step.'
        : ` Starting balances: ${r.startUnproven.map((u) => `${u.account.slice(0, 10)}…'s is declared by the node, not proven (${u.why})`).join('; ')}.`) : '')
      + (Array.isArray(r.sessionUnproven) && r.steps.some((s) => s.op !== null && transcript.steps[s.index]?.body?.includes('"type":"session_game"'))
        ? (r.sessionUnproven.length === 0
          ? ' Session keys: every step a session key signed is proven authorized by its account (its session record, against the state root of the block before it).'
          : ` Session keys: ${r.sessionUnproven.map((u) => `step ${u.step}'s authorization is not proven (${u.why})`).join('; ')}.`)
        : '');
    $('status').textContent = r.ok
      ? `✓ Verified: ${r.steps.length === 1 ? 'its 1 step matches' : `all ${r.steps.length} steps match`} (${r.finished ? 'finished' : 'not shown to have finished'}; code ${r.codeOrigin === 'genesis' ? 'of the genesis' : r.codeOrigin === 'module record' ? 'proven by its module record' : 'named by the node'}).${beacons}`
      : `✗ Diverged after ${r.steps.length} matching steps.`;
    $('status').className = r.ok ? 'ok' : 'fail';
    $('facts').textContent = `${source}: ${bytes} bytes, code ${transcript.code_hash.slice(0, 16)}…, verified in ${r.elapsedMs} ms${r.isolated ? ' (in a Worker)' : ''}.`;
    document.body.dataset.elapsed = String(r.elapsedMs);
    document.body.dataset.result = r.ok ? 'verified' : 'diverged';
  } catch (e) {
    $('status').textContent = `Could not verify: ${e && e.message ? e.message : e}`;
    $('status').className = 'fail';
    document.body.dataset.result = 'error';
  }
  document.body.dataset.done = '1';
}

$('file').addEventListener('change', async () => {
  const f = $('file').files[0];
  if (!f) return;
  // Not done from here on (reading the file takes a turn of the event loop): whoever waits for
  // `data-done` must not read the previous check's result.
  delete document.body.dataset.done;
  delete document.body.dataset.result;
  if (f.size > MAX_TRANSCRIPT_BYTES) { $('status').textContent = `The file is over ${MAX_TRANSCRIPT_BYTES} bytes.`; document.body.dataset.done = '1'; return; }
  const text = await f.text();
  let t;
  try { t = JSON.parse(text); } catch { $('status').textContent = 'The file is not JSON.'; document.body.dataset.done = '1'; return; }
  await check(t, text.length, f.name);
});

if (id) {
  try {
    const res = await fetch(`/v1/games/${encodeURIComponent(module)}/${encodeURIComponent(id)}/transcript`);
    // Read at most MAX_TRANSCRIPT_BYTES (the node serves at most 16 MiB of steps).
    const text = await chain.readBounded(res, MAX_TRANSCRIPT_BYTES);
    if (!res.ok) throw new Error(`${res.status}: ${text.slice(0, 300)}`);
    const t = JSON.parse(text);
    const a = $('download');
    a.href = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
    a.download = `${module}-${id}.json`;
    a.hidden = false;
    await check(t, text.length, 'the node\'s transcript');
  } catch (e) {
    $('status').textContent = `Could not fetch the transcript: ${e && e.message ? e.message : e}`;
    $('status').className = 'fail';
    document.body.dataset.done = '1';
  }
} else {
  $('status').textContent = 'Give ?module=<id>&id=<game> in the address, or load a transcript file below.';
  document.body.dataset.done = '1';
}
