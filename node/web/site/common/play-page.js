// play-page.js: what the play pages (/play/tictactoe/, /play/mnk/, /play/rps/, /play/dice/,
// /play/sealed-rps/, /play/auction/) share on screen: the markup of their common blocks and the
// code of the status line. A page's HTML keeps its own sections and marks each shared block's
// place with `<div data-part="NAME"></div>`;
// `fillPlayPage` replaces each mark by the block (the same elements, ids and texts as a page
// written out in full), first thing, before the SDK loads (so `#fatal` is there to show a
// failed load). The blocks:
//   header   the page's name, links to the explorer, the other play pages and the SDK, the status
//            line (`#height`, `#live`), and the `#fatal` box of sdk-loader.js
//   player   `#me`: the address, balance (with `#balance-proof`: provenBalance, showProvenBalance)
//            and faucet, the key controls of player-key.js
//   session  `#session`: the session key of the table pages (common/table.js)
//   messages `#error` (refusals, role alert) and `#info` (what is being done)
//   table    `#table`: a table page's board (with `#view-proof`: provenView, showProvenView), its
//            buttons (`#resign-btn` with `resign`) and timeout
//   lists    `#lobby` (open tables, offers or duels) and `#mine` (the player's games), each with a More
//            button (`#open-more`, `#my-more`) with `more`
import { $ } from './sdk-loader.js';

/** The play pages, in the order the header links them. */
export const PLAY_PAGES = [
  { id: 'tictactoe', path: '/play/tictactoe/', title: 'Tic-tac-toe', link: 'tic-tac-toe' },
  { id: 'mnk', path: '/play/mnk/', title: 'm,n,k', link: 'm,n,k' },
  { id: 'rps', path: '/play/rps/', title: 'Rock-paper-scissors', link: 'rock-paper-scissors' },
  { id: 'dice', path: '/play/dice/', title: 'Dice duel', link: 'dice' },
  { id: 'sealed-rps', path: '/play/sealed-rps/', title: 'Sealed rock-paper-scissors', link: 'sealed RPS' },
  { id: 'auction', path: '/play/auction/', title: 'Sealed-bid auction', link: 'auction' },
];

const PARTS = {
  header: ({ page }) => {
    const me = PLAY_PAGES.find((p) => p.id === page);
    if (!me) throw new Error(`play-page.js: no play page ${page}`);
    const others = PLAY_PAGES.filter((p) => p !== me).map((p) => `<a href="${p.path}">${p.link}</a>`).join(' ');
    return `<header><b>${me.title}</b> <a href="/">explorer</a> ${others} <a href="/sdk/">SDK</a>
  <span class="note">height <span id="height">…</span> · <span id="live">connecting…</span></span></header>
<div id="fatal" class="notice" hidden></div>`;
  },
  player: () => `<section id="me">
  <h2>You</h2>
  <div>Address <code id="address"></code> · balance <b id="balance">…</b> GOLD <span id="balance-proof" class="note"></span>
    <button id="faucet" hidden>Get GOLD from the faucet</button></div>
  <div>Key (kept in this browser): <button id="export">Show / hide WIF</button> <code id="wif-shown" hidden></code>
    <input id="wif-input" placeholder="WIF to import" size="40" autocomplete="off"> <button id="import">Import</button>
    <button id="new-key">New key</button></div>
</section>`,
  session: () => `<section id="session">
  <h2>Session key</h2>
  <p class="note" id="session-status">No session: every move is signed with your key.</p>
  Cap <input id="session-cap" size="8" value="10.00"> GOLD ·
  <button id="session-start">Play with a session key</button>
  <button id="session-end" hidden>End the session</button>
</section>`,
  messages: () => `<div id="error" class="error" role="alert"></div>
<p id="info" class="note"></p>`,
  table: ({ resign }) => `<section id="table" hidden>
  <h2>Table <code id="game-id"></code></h2>
  <p id="players" class="note"></p>
  <div id="board" class="board"></div>
  <p id="view-proof" class="note"></p>
  <p id="turn"></p>
  <p id="result"></p>
  <button id="join-btn" hidden>Join</button>
  <button id="cancel-btn" hidden>Cancel (stake back)</button>${resign ? `
  <button id="resign-btn" hidden>Resign</button>` : ''}
  <button id="claim-btn" hidden>Claim the timeout</button>
  <p id="claim-info" class="note"></p>
</section>`,
  lists: ({ noun, more }) => `<section id="lobby">
  <h2>Open ${noun}</h2>
  <p id="open-empty" class="note">None right now.</p>
  <ul id="open-list"></ul>${more ? `
  <button id="open-more" hidden>More</button>` : ''}
</section>
<section id="mine">
  <h2>Your games</h2>
  <ul id="my-list"></ul>${more ? `
  <button id="my-more" hidden>More</button>` : ''}
</section>`,
};

/**
 * Replaces every `[data-part]` mark of the page by its block.
 * @param {object} o
 * @param {string} o.page this page's id in PLAY_PAGES (its name in the header, the others linked)
 * @param {string} [o.noun] what the lobby lists ("tables", "offers")
 * @param {boolean} [o.more] More buttons under the lists (paged lists)
 * @param {boolean} [o.resign] a Resign button on the table
 */
export function fillPlayPage(o) {
  for (const mark of document.querySelectorAll('[data-part]')) {
    const part = PARTS[mark.dataset.part];
    if (!part) throw new Error(`play-page.js: no block ${mark.dataset.part}`);
    const t = document.createElement('template');
    t.innerHTML = part(o);
    mark.replaceWith(t.content);
  }
}

/** Shows a refusal or failure in `#error` ('' clears it). */
export const showError = (text) => { $('error').textContent = text; };
/** Says what is being done in `#info`. */
export const say = (text) => { $('info').textContent = text; };
/** An address shortened for people. */
export const short = (a) => (a ? `${a.slice(0, 8)}…` : '—');

/** The status line's height (and `body[data-height]`, for the browser tests). */
export function showHeight(height) {
  $('height').textContent = String(height);
  document.body.dataset.height = String(height);
}

/** The status line's feed state: the `onOpen`/`onError` of a block or game subscription. */
export const liveStatus = Object.freeze({
  onOpen: () => { $('live').textContent = 'live'; },
  onError: () => { $('live').textContent = 'reconnecting…'; },
});

/**
 * The player's GOLD balance proven from the genesis alone, on a chain with state proofs: the
 * node's answer for `bal/<address>/GOLD` with its proof against the head block's state root,
 * signed by the chain's block signer (`getStateProven`, the SDK's); a promise, or null on a chain
 * without proofs (its genesis names no `sparse_merkle` state commitment).
 */
export function provenBalance({ chain, getStateProven, genesis, status, address }) {
  if (genesis.state_commitment !== 'sparse_merkle') return null;
  return getStateProven(chain, `bal/${address}/GOLD`, trust(genesis, status));
}

/**
 * What a light-client read trusts: the genesis sequencer's signature; on a chain with validators
 * (and `status`, whose `genesis_hash` names the certificates' namespace) a quorum of the genesis
 * set's finality certificate, so one validator's signature alone does not pass.
 */
function trust(genesis, status) {
  if (!genesis.validators) return { signers: [genesis.sequencer] };
  // Never one validator's signature alone: without the hash the check refuses (✗ not proven).
  return { finality: { validators: genesis.validators, chainId: genesis.chain_id, genesisHash: status?.genesis_hash } };
}

/** "✓ proven at block N", or "✓ proven final at block N" when a quorum's certificate checked. */
function provenText(r) {
  return `✓ proven${r.final ? ' final' : ''} at block ${r.height}`;
}

/**
 * `module`'s view of `query` proven from the genesis alone, on a chain with state proofs: the
 * node's answer with every state entry the view read proven against the head block's state root,
 * signed by the chain's block signer, and the view re-executed on the module's wasm over those
 * entries alone (`getViewProven`, the SDK's); a promise of `{value, error, height, …}`, or null on
 * a chain without proofs.
 */
export function provenView({ chain, getViewProven, genesis, status, module, query }) {
  if (genesis.state_commitment !== 'sparse_merkle' || typeof getViewProven !== 'function') return null;
  return getViewProven(chain, module, query, trust(genesis, status));
}

/**
 * Shows a settled `provenView()` in `#view-proof` as `showProvenBalance` does: "✓ proven at block
 * N", "✗ not proven: why", or nothing (null: a chain without proofs; also to clear it).
 * `#view-proof[data-proven]` is '1', '0' or absent, for the browser tests.
 */
export function showProvenView(r) {
  const mark = $('view-proof');
  if (!mark) return;
  if (r === null || (r.status === 'fulfilled' && r.value === null)) {
    mark.textContent = '';
    delete mark.dataset.proven;
  } else if (r.status === 'rejected') {
    mark.textContent = `✗ not proven: ${r.reason?.message ?? r.reason}`;
    mark.dataset.proven = '0';
  } else {
    mark.textContent = provenText(r.value);
    mark.dataset.proven = '1';
  }
}

/**
 * Shows a settled `provenBalance()` (a `Promise.allSettled` result) in `#balance-proof`: "✓ proven
 * at block N", with the proven amount in `#balance` (`gold(units)`), only when the proof checks;
 * "✗ not proven: why" when it does not; nothing on a chain without proofs.
 * `#balance-proof[data-proven]` is '1', '0' or absent, for the browser tests.
 */
export function showProvenBalance(r, gold) {
  const mark = $('balance-proof');
  if (r.status === 'rejected') {
    mark.textContent = `✗ not proven: ${r.reason?.message ?? r.reason}`;
    mark.dataset.proven = '0';
  } else if (r.value === null) {
    mark.textContent = '';
    delete mark.dataset.proven;
  } else {
    const units = r.value.value === null ? '0' : new TextDecoder().decode(r.value.value);
    $('balance').textContent = gold(units);
    mark.textContent = provenText(r.value);
    mark.dataset.proven = '1';
  }
}

/** The faucet button of `#me`: shown when the chain has a faucet (its genesis says), `onClick` its action. */
export function faucetButton(genesis, onClick) {
  $('faucet').hidden = !genesis.faucet;
  $('faucet').onclick = onClick;
}

/** A hash or beacon shortened for people: its first 8 and last 4 hex characters. */
export const shortHex = (h) => (h ? `${h.slice(0, 8)}…${h.slice(-4)}` : '');

/**
 * The pages' `act(label, action)`: sends one transaction signed by `getKey()` through `chain`,
 * waits for its receipt and shows a refusal or a failed receipt's text (`ChainError`: the SDK's
 * API error class); returns the receipt, or null when nothing was included. One at a time: while
 * it runs `body[data-busy]` is set (a second call returns null at once); `refresh()` after each.
 */
export function actor({ chain, ChainError, getKey, refresh }) {
  return async function act(label, action) {
    if (document.body.dataset.busy) return null;
    showError('');
    say(`${label}: sending…`);
    document.body.dataset.busy = '1';
    try {
      const txid = await chain.send(getKey(), action);
      say(`${label}: ${txid.slice(0, 16)}… waiting for its block`);
      const r = await chain.waitForReceipt(txid, { timeoutMs: 90000 });
      if (!r.ok) {
        showError(`${label} refused: ${r.error}`);
        say(`${label}: included at height ${r.height}, failed`);
      } else {
        say(`${label}: included at height ${r.height}`);
      }
      return r;
    } catch (e) {
      showError(e instanceof ChainError ? `${label} refused: ${e.code}: ${e.message}` : `${label}: ${e.message ?? e}`);
      say('');
      return null;
    } finally {
      delete document.body.dataset.busy;
      refresh();
    }
  };
}
