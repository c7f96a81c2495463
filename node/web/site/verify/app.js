// app.js of /verify/: fetches a game's transcript (GET /v1/games/<module>/<id>/transcript), its
// module's wasm by code hash (checked by Chain.code) and this node's genesis (the block signer and
// chain id the transcript must match), runs the SDK's verifyTranscript (every op re-executed in a
// Worker of this page), and draws each step with ✓, or the first divergence in red. A transcript
// file can be checked the same way (the file input). `body[data-done]` is set when a check ends.
import { loadSdk } from '../common/sdk-loader.js';

const $ = (id) => document.getElementById(id);
/** Largest transcript read, from the node or a file. */
const MAX_TRANSCRIPT_BYTES = 24 << 20;
const short = (a) => (a ? `${a.slice(0, 6)}…${a.slice(-4)}` : '');

const { Chain, verifyTranscript } = await loadSdk();
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
  let rows = 3;
  let cols = 3;
  const events = steps.flatMap((s) => s.events);
  const data = events.find((e) => e.kind === `${t.module}.created`)?.data;
  if (t.module === 'mnk' && data) { rows = data.rows; cols = data.cols; }
  if (!(Number.isInteger(rows) && Number.isInteger(cols) && rows >= 1 && rows <= 19 && cols >= 1 && cols <= 19)) return;
  const moved = events.filter((e) => e.kind === `${t.module}.moved`).at(-1)?.data?.board;
  const marks = typeof moved === 'string' && moved.length === rows * cols ? moved : '.'.repeat(rows * cols);
  const cells = [...marks].map((c) => (c === 'x' || c === 'o' ? c : ''));
  const board = $('board');
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

function describe(s) {
  const op = s.op ?? {};
  const where = op.cell !== undefined ? ` cell ${op.cell}` : op.row !== undefined ? ` row ${op.row} col ${op.col}` : '';
  const events = s.events.map((e) => e.kind).join(', ');
  return `${s.kind ?? 'op'}${where} by ${short(s.sender)} (block ${s.height}) → ${events}`;
}

async function check(transcript, bytes, source) {
  delete document.body.dataset.done;
  $('status').textContent = 'Verifying…';
  $('divergence').textContent = '';
  $('steps').replaceChildren();
  try {
    const genesis = await chain.genesis();
    const wasm = await chain.code(transcript.code_hash);
    // A chain with validators: a header is signed by the validator that proposed it.
    const signers = genesis.validators ? genesis.validators.set.map((v) => v.address) : undefined;
    // The game checked: the one in the address (its module tictactoe unless named), else, for
    // a file on a bare /verify/, the one the file names, said so on the page.
    const want = asked.id ? { module, game: id } : { module: String(transcript.module), game: String(transcript.game) };
    $('game').textContent = `${want.module}:${want.game}${asked.id ? '' : ' (as the file names it)'}`;
    const r = await verifyTranscript(transcript, wasm, {
      sequencer: genesis.sequencer, signers, chainId: genesis.chain_id, genesisModules: genesis.modules, ...want,
    });
    const items = r.steps.map((s) => {
      const li = document.createElement('li');
      li.dataset.ok = '1';
      li.className = 'ok';
      li.textContent = `✓ ${describe(s)}`;
      return li;
    });
    if (r.divergence) {
      const d = r.divergence;
      const li = document.createElement('li');
      li.dataset.ok = '0';
      li.className = 'fail';
      li.textContent = `✗ ${d.field}`;
      if (d.index !== null) items.push(li);
      $('divergence').textContent = `Divergence${d.index === null ? '' : ` at step ${d.index} (tx ${d.txid})`}: ${d.field}. Expected ${d.expected}; got ${d.got}.`;
    }
    $('steps').replaceChildren(...items);
    drawBoard(transcript, r.steps);
    $('status').textContent = r.ok
      ? `✓ Verified: all ${r.steps.length} steps match (${r.finished ? 'finished' : 'not shown to have finished'}; code ${r.codeOrigin === 'genesis' ? 'of the genesis' : 'named by the node'}).`
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
