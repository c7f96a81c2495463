// table.js: the browser game of a staked two-player table module (tictactoe, mnk), shared by
// /play/tictactoe/ and /play/mnk/: the player's key (kept in localStorage, WIF export/import),
// faucet on dev chains, balance, live lobby of open tables, create (stake, invited opponent),
// join, the board with whose turn it is, moves, cancel, resign (mnk), a session key (one
// signature of the player's key lets a key kept in this browser play this module for the account,
// up to a cap of GOLD, for two hours of block time: docs/session-keys.md), claim_timeout from the
// height it becomes possible, results and payouts, the player's games, and every refused
// transaction's error text. Redraws on each of the module's events (`chain.subscribeGame`: the
// node's live query of this module, not whole blocks), and keeps the height (for the timeout)
// from its heads; `#<game id>` in the URL opens a table. Every op is built, every view answer
// read and every event parsed by the module's generated typed client (`/clients/<module>.js`,
// checked against its schema; amounts are bigint); a client generated from another version of
// the module's schema than the node serves is said so on the page. The markup the play pages
// share (header, key panel, session, table, lists) is common/play-page.js's.
import { loadSdk, loadClient, gold, toUnits, $ } from './sdk-loader.js';
import { playerKey } from './player-key.js';
import {
  fillPlayPage, showError, say, short, showHeight, liveStatus, faucetButton, provenBalance, showProvenBalance,
  provenView, showProvenView,
} from './play-page.js';

/**
 * @param {object} game
 * @param {string} game.module module id
 * @param {(typed: object, chain: object) => object} game.client the module's client class of its
 *   generated module (`typed`), made over `chain`
 * @param {(g: object) => {rows: number, cols: number}} game.shape board size of a game
 * @param {(index: number, g: object) => object} game.moveArgs the move's arguments (besides
 *   `id`) on cell `index`
 * @param {() => object} game.createArgs extra create arguments (throws a message for the player)
 * @param {boolean} [game.resign] offer `resign`
 */
export async function startTable(game) {
  fillPlayPage({ page: game.module, noun: 'tables', more: true, resign: Boolean(game.resign) });
  const [{ Chain, Key, ChainError, getStateProven, getViewProven }, typed] = await Promise.all([loadSdk(), loadClient(game.module)]);
  const chain = new Chain(location.origin);
  const client = game.client(typed, chain);
  const info = await client.viewInfo();
  /** Largest board side a page draws (the modules allow at most 19). */
  const MAX_SIDE = 19;
  const [status, genesis] = await Promise.all([chain.status(), chain.genesis()]);
  let head = status.height;
  let key = null; // the player's key (player-key.js), set below once the page can redraw
  let current = null; // the open table's id
  let busy = false;

  /**
   * Sends one transaction, waits for its receipt; shows the refusal or the failed receipt's text.
   * Resolves to the receipt, or null. `send` signs and posts it, resolving to its txid (the typed
   * client's builders check their arguments when called: a SchemaError is shown like a refusal,
   * nothing is sent).
   */
  async function act(label, send) {
    if (busy) return null;
    busy = true;
    showError('');
    say(`${label}: sending…`);
    document.body.dataset.busy = '1';
    try {
      const txid = await send();
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
      if (e instanceof ChainError && e.code === 'session_refused') {
        // Expired, revoked or out of cap: the page forgets the session; the next op is the key's.
        forgetSession();
      }
      return null;
    } finally {
      busy = false;
      delete document.body.dataset.busy;
      refresh();
    }
  }

  /**
   * Sends a module op made by one of the client's builders (`typed.moveOp` …): signed by the
   * session key while a session lives, else by the player's key.
   */
  const op = (build, args) => async () => {
    const action = typed.gameAction(build(args));
    return session ? session.send(action.game, action.op) : chain.send(key, action);
  };
  /** Sends `action` signed by the player's key. */
  const signed = (action) => () => chain.send(key, action);

  // Session key: kept in this browser (localStorage, per module and account), checked against
  // the node's list of the account's sessions on every redraw.
  const SESSION_MS = 2 * 60 * 60 * 1000;
  let session = null;
  const sessionItem = () => `gamechain.session.${game.module}.${key.address}`;
  function forgetSession() {
    localStorage.removeItem(sessionItem());
    session = null;
    showSession(null);
  }
  function showSession(info) {
    $('session-start').hidden = session !== null;
    $('session-end').hidden = session === null;
    $('session-status').textContent = session && info
      ? `Session key ${short(session.address)} plays ${game.module} for you: ${gold(info.spent)} of ${gold(info.cap)} GOLD used, until ${new Date(info.expires_at_ms).toLocaleString()} (block time).`
      : 'No session: every move is signed with your key.';
  }
  /** The kept session, if the node still lists it as active for this key. */
  async function checkSession() {
    let kept = null;
    try { kept = JSON.parse(localStorage.getItem(sessionItem()) ?? 'null'); } catch { /* dropped below */ }
    if (!kept || kept.account !== key.address) { session = null; showSession(null); return; }
    const s = chain.session(kept);
    const list = await chain.sessions(key.address);
    const info = list.sessions.find((x) => x.key === s.address && x.id === s.id && x.active);
    if (!info) { forgetSession(); return; }
    session = s;
    showSession(info);
  }
  $('session-start').onclick = async () => {
    if (busy) return;
    let cap;
    try { cap = toUnits($('session-cap').value); } catch (e) { showError(e.message); return; }
    busy = true;
    document.body.dataset.busy = '1';
    showError('');
    say('session: your key signs the authorization…');
    try {
      const s = await chain.authorizeSession(key, { modules: [game.module], cap, expiresInMs: SESSION_MS, timeoutMs: 90000 });
      localStorage.setItem(sessionItem(), JSON.stringify(s.toJSON()));
      say(`session: key ${short(s.address)} authorized; moves are signed with it from now on`);
    } catch (e) {
      showError(`session: ${e instanceof ChainError ? `${e.code}: ` : ''}${e.message ?? e}`);
      say('');
    } finally {
      busy = false;
      delete document.body.dataset.busy;
      refresh();
    }
  };
  $('session-end').onclick = () => session && act('end the session', signed({ type: 'revoke_session', key: session.address }))
    .then((r) => { if (r && r.ok) forgetSession(); });
  const who = (a) => (a === key.address ? 'you' : short(a));

  // The balance proven from the genesis alone (a chain with state proofs): play-page.js.
  const balanceProof = () => provenBalance({ chain, getStateProven, genesis, status, address: key.address });

  // Key, faucet, balance.
  faucetButton(genesis, () => act('faucet', signed({ type: 'faucet', token: 'GOLD' })));
  key = playerKey({
    Key, network: status.network, $, showError,
    onChange: (k) => { key = k; refresh(); },
    replaceWarning: 'Replace this key with a new one? Export it first if it holds GOLD.',
  });

  // Create.
  $('create-btn').onclick = () => {
    let args;
    try {
      args = { ...game.createArgs(), stake: BigInt(toUnits($('stake').value)) };
      const opp = $('opponent').value.trim();
      if (opp) args.opponent = opp;
    } catch (e) { showError(e.message); return; }
    act('create', op(typed.createOp, args)).then((r) => {
      try {
        const ev = r && r.ok && typed.eventsOf(r).find((e) => e.kind === `${game.module}.created`);
        if (ev) location.hash = ev.data.id;
      } catch (e) {
        // An event that breaks the schema (a node that lies about the receipt).
        showError(`create: ${e.message ?? e}`);
      }
    });
  };

  function gameLine(g) {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = `#${g.id}`;
    a.textContent = g.id;
    li.append(a, ` ${g.status} · stake ${gold(g.stake)} GOLD · x ${who(g.x)}${g.o ? ` · o ${who(g.o)}` : ''}${g.rows ? ` · ${g.rows}×${g.cols}, ${g.k} in a row` : ''}`);
    li.dataset.id = g.id;
    return li;
  }

  // A list is replaced only when what it shows changed: redrawn on every block (ten a second on
  // fast chains), a list replaced under the pointer would swallow the click on its link.
  function showList(list, items) {
    const shown = items.map((li) => `${li.dataset.id} ${li.textContent}`).join('\n');
    if (list.dataset.shown === shown) return;
    list.dataset.shown = shown;
    list.replaceChildren(...items);
  }

  function resultText(g) {
    const payout = BigInt(g.stake) * 2n;
    if (g.status === 'cancelled') return `Cancelled: ${gold(g.stake)} GOLD back to ${who(g.x)}.`;
    if (g.result === 'draw') return `Draw: each player gets ${gold(g.stake)} GOLD back.`;
    const winner = g.winner === key.address ? 'You won' : g.winner === g.x || g.winner === g.o ? (key.address === g.x || key.address === g.o ? 'You lost' : `${short(g.winner)} won`) : 'Finished';
    return `${winner} (${g.result}, ${g.reason}): payout ${gold(String(payout))} GOLD to ${who(g.winner)}.`;
  }

  let shown = null; // the game drawn last, redrawn on each head (the timeout's height)

  // The open table's view proven (`#view-proof`, on chains with state proofs): after it is drawn,
  // never holding up the redraw, one proof at a time, again only when the table or the game
  // drawn changed since the last; the mark is cleared while the board on screen is not the one
  // proven.
  let proving = false;
  let provenMark = null;
  let provenDrawn = null; // the board the shown proof is of
  let proveWanted = false;
  function proveView() {
    proveWanted = true;
    if (proving || !current) return;
    const id = current;
    const drawn = $('board').dataset.drawn ?? '';
    // The board changed since its proof: the old mark does not speak for it.
    if (drawn !== provenDrawn) showProvenView(null);
    const mark = `${id} ${drawn}`;
    proveWanted = false;
    if (mark === provenMark) return;
    const proof = provenView({ chain, getViewProven, genesis, status, module: game.module, query: { id } });
    if (proof === null) return;
    provenMark = mark;
    proving = true;
    proof.then((value) => ({ status: 'fulfilled', value }), (reason) => ({ status: 'rejected', reason })).then((r) => {
      proving = false;
      if (current !== id) return;
      // "✓ proven" only for the board on screen: a proven answer of another game state (the
      // game moved on since, or the plain view disagrees) is proven again at the next head.
      if (r.status === 'fulfilled' && r.value !== null && (shown === null || canonical(r.value.value) !== canonical(shown))) {
        provenMark = null;
        showProvenView(null);
      } else {
        // A refusal is tried again at the next head (the node may have been busy).
        if (r.status === 'fulfilled') provenDrawn = $('board').dataset.drawn ?? '';
        else { provenDrawn = null; provenMark = null; }
        showProvenView(r);
      }
      if (proveWanted) proveView();
    });
  }
  /** A view value as sorted JSON, amounts (bigint in the typed client's values) as decimal text. */
  function canonical(v) {
    const sort = (x) => (Array.isArray(x) ? x.map(sort)
      : x !== null && typeof x === 'object' ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, sort(x[k])]))
        : typeof x === 'bigint' ? String(x) : x);
    return JSON.stringify(sort(v));
  }
  function drawTable(g) {
    const { rows, cols } = game.shape(g);
    const side = (n) => Number.isInteger(n) && n >= 1 && n <= MAX_SIDE;
    if (!side(rows) || !side(cols) || g.board.length !== rows * cols) {
      shown = null;
      showError(`game ${g.id}: the node's answer is not a board of at most ${MAX_SIDE}×${MAX_SIDE} (rows ${rows}, cols ${cols}, ${g.board.length} cells)`);
      return;
    }
    shown = g;
    $('table').hidden = false;
    $('game-id').textContent = g.id;
    const board = $('board');
    board.style.gridTemplateColumns = `repeat(${cols}, auto)`;
    board.classList.toggle('small', cols > 9);
    const mine = g.status === 'playing' && ((g.turn === 'x' && g.x === key.address) || (g.turn === 'o' && g.o === key.address));
    // Rebuilt only when the game changed (see showList: a button replaced under the pointer
    // swallows the click).
    const drawn = `${key.address} ${JSON.stringify(g, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`;
    if (board.dataset.drawn !== drawn) {
      board.dataset.drawn = drawn;
      board.replaceChildren(...[...g.board].slice(0, rows * cols).map((c, i) => {
        const b = document.createElement('button');
        b.textContent = c === '.' ? '' : c;
        b.className = c === '.' ? '' : c;
        b.dataset.cell = String(i);
        b.disabled = g.status !== 'playing';
        b.title = mine ? 'your move' : '';
        b.onclick = () => act(`move ${i}`, op(typed.moveOp, { id: g.id, ...game.moveArgs(i, g) }));
        return b;
      }));
    }
    $('players').textContent = `x: ${who(g.x)} · o: ${g.o ? who(g.o) : g.opponent ? `invited ${short(g.opponent)}` : 'waiting for anyone'} · stake ${gold(g.stake)} GOLD each`;
    const me = key.address;
    let turn = '';
    if (g.status === 'open') turn = g.x === me ? 'Waiting for an opponent to join.' : 'Open: join to play o.';
    else if (g.status === 'playing') turn = mine ? `Your turn (${g.turn}).` : `${g.turn}'s turn (${who(g.turn === 'x' ? g.x : g.o)}).`;
    $('turn').textContent = turn;
    $('result').textContent = g.status === 'finished' || g.status === 'cancelled' ? resultText(g) : '';
    if (g.status === 'finished') {
      // Anyone can re-execute the finished match in their browser (/verify/, docs/verify-a-match.md).
      const a = document.createElement('a');
      a.id = 'verify-link';
      a.href = `/verify/?module=${encodeURIComponent(game.module)}&id=${encodeURIComponent(g.id)}`;
      a.textContent = 'Verify this match';
      $('result').append(' ', a);
    }
    $('join-btn').hidden = !(g.status === 'open' && g.x !== me && (!g.opponent || g.opponent === me));
    $('cancel-btn').hidden = !(g.status === 'open' && g.x === me);
    const player = g.x === me || g.o === me;
    if ($('resign-btn')) $('resign-btn').hidden = !(game.resign && g.status === 'playing' && player);
    const from = g.last_move_height + info.timeout_blocks;
    const canClaim = g.status === 'playing' && player && !mine;
    $('claim-btn').hidden = !canClaim;
    $('claim-btn').disabled = head + 1 < from;
    $('claim-info').textContent = canClaim ? (head + 1 < from ? `The timeout can be claimed from height ${from} (now ${head}).` : `The timeout can be claimed now (from height ${from}).`) : '';
  }

  $('join-btn').onclick = () => current && act('join', op(typed.joinOp, { id: current }));
  $('cancel-btn').onclick = () => current && act('cancel', op(typed.cancelOp, { id: current }));
  $('claim-btn').onclick = () => current && act('claim_timeout', op(typed.claimTimeoutOp, { id: current }));
  if ($('resign-btn')) $('resign-btn').onclick = () => current && act('resign', op(typed.resignOp, { id: current }));

  function showHead() { showHeight(head); }

  // The lists are paged by the module (`&after=`, `&limit=`; a full page names `next`): each
  // shows `pages.<list>` pages, one more per click on its More button, at most MAX_PAGES.
  const MAX_PAGES = 20;
  const pages = { open: 1, mine: 1 };
  for (const [list, button] of [['open', 'open-more'], ['mine', 'my-more']]) {
    $(button).addEventListener('click', () => { pages[list] = Math.min(pages[list] + 1, MAX_PAGES); refresh(); });
  }
  /** The games of the first `count` pages of a list view, and whether the node has more. */
  async function pagesOf(view, count) {
    const games = [];
    let after;
    for (let i = 0; i < count; i++) {
      const answer = await view(after === undefined ? {} : { after });
      games.push(...answer.games);
      if (answer.next === undefined) return { games, more: false };
      after = answer.next;
    }
    return { games, more: count < MAX_PAGES };
  }

  // Redraws: everything, on each of the module's events and after each action (a redraw asked
  // for while one runs is done after it). Each part is drawn on its own: one answer the client
  // refuses (it breaks the schema) is shown as an error and leaves the other parts drawn.
  let refreshing = false;
  let again = false;
  async function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    try {
      do {
        again = false;
        const [acct, open, mine, g, sess, proven] = await Promise.allSettled([
          chain.account(key.address),
          pagesOf((page) => client.viewOpen({ open: '1', ...page }), pages.open),
          pagesOf((page) => client.viewPlayer({ player: key.address, ...page }), pages.mine),
          current ? client.viewGame({ id: current }).catch((e) => (e.code === 'not_found' ? null : Promise.reject(e))) : null,
          checkSession(),
          balanceProof(),
        ]);
        const failed = [acct, open, mine, g, sess].find((r) => r.status === 'rejected');
        if (failed) {
          const e = failed.reason;
          showError(e instanceof ChainError ? `${e.code}: ${e.message}` : String(e?.message ?? e));
        }
        if (acct.status === 'fulfilled') $('balance').textContent = gold(acct.value.balances.GOLD);
        showProvenBalance(proven, gold);
        if (open.status === 'fulfilled') {
          showList($('open-list'), open.value.games.map(gameLine));
          $('open-empty').hidden = open.value.games.length > 0;
          $('open-more').hidden = !open.value.more;
        }
        if (mine.status === 'fulfilled') {
          showList($('my-list'), [...mine.value.games].reverse().map(gameLine));
          $('my-more').hidden = !mine.value.more;
        }
        if (g.status === 'fulfilled') {
          if (g.value) { drawTable(g.value); proveView(); }
          else if (current) { shown = null; $('table').hidden = false; $('turn').textContent = `No game ${current} (yet).`; }
          else { shown = null; $('table').hidden = true; }
        }
        showHead();
      } while (again);
    } catch (e) {
      showError(String(e?.message ?? e));
    } finally {
      refreshing = false;
    }
  }

  /**
   * Whether the node's module has the schema this page's client was generated from (the SHA-256
   * the client names): after an upgrade, or on a chain whose module differs, the page says so.
   * Needs WebCrypto (a secure context: https, or this machine); skipped without it.
   */
  async function checkSchema() {
    if (!globalThis.crypto?.subtle) return;
    try {
      const res = await fetch(`/v1/modules/${game.module}/schema`);
      const bytes = new Uint8Array(await res.arrayBuffer());
      const hash = [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');
      if (!res.ok || hash !== typed.SCHEMA_SHA256) {
        const box = $('notice');
        box.hidden = false;
        box.textContent = `This page's ${game.module} client was made from schema ${typed.SCHEMA_SHA256.slice(0, 12)}…, `
          + `the node's ${game.module} ${res.ok ? `has schema ${hash.slice(0, 12)}…` : 'serves no schema'} (the module was upgraded, or this node runs another version): answers it cannot read are shown as errors.`;
        document.body.dataset.schemaMismatch = '1';
      }
    } catch { /* the check is advisory: the client still checks every answer */ }
  }

  function openFromHash() {
    const id = decodeURIComponent(location.hash.slice(1));
    current = /^[0-9a-f]{16}$/.test(id) ? id : null;
    if (!current) $('table').hidden = true;
    showProvenView(null);
    provenMark = null;
    provenDrawn = null;
    refresh();
  }
  window.addEventListener('hashchange', openFromHash);

  chain.subscribeGame(game.module, () => refresh(), {
    onHead: (h) => { head = h.height; showHead(); if (shown) drawTable(shown); },
    ...liveStatus,
  });
  checkSchema();
  openFromHash();
  document.body.dataset.ready = '1';
}
