// player-key.js: the player's key on the play pages (/play/tictactoe/, /play/mnk/, /play/rps/, /play/dice/):
// kept in this browser's localStorage as a WIF (`gamechain.wif`, one key for every page of the
// origin), made on the first visit, shown (`#address`), exported (`#export` shows the WIF in
// `#wif-shown`), imported (`#import` reads `#wif-input`, refused for another network) and replaced
// (`#new-key`, after a confirmation). The page learns of a new key through `onChange`.

/** The localStorage item holding the player's key (WIF). */
export const KEY_STORAGE = 'gamechain.wif';

/**
 * Wires the key controls of a play page and returns the key kept in this browser (a new one
 * when none is kept, or when the kept one is for another network or unreadable).
 * @param {object} o
 * @param {typeof import('../../sdk/src/index.js').Key} o.Key the SDK's Key class
 * @param {string} o.network this chain's network (`testnet`/`mainnet`)
 * @param {(id: string) => HTMLElement} o.$ the page's element lookup
 * @param {(text: string) => void} o.showError shows a refused import
 * @param {(key: object) => void} o.onChange after an import or a new key, with it
 * @param {string} o.replaceWarning the confirmation asked before a new key replaces this one
 */
export function playerKey({ Key, network, $, showError, onChange, replaceWarning }) {
  let key = null;
  const stored = localStorage.getItem(KEY_STORAGE);
  if (stored) {
    try {
      const k = Key.fromWif(stored);
      if (k.network === network) key = k;
    } catch { /* replaced below */ }
  }
  const show = () => {
    $('address').textContent = key.address;
    $('wif-shown').hidden = true;
  };
  const keep = (k) => {
    key = k;
    localStorage.setItem(KEY_STORAGE, k.toWif());
    show();
  };
  if (!key) keep(Key.generate(network));
  show();
  $('export').onclick = () => { $('wif-shown').textContent = key.toWif(); $('wif-shown').hidden = !$('wif-shown').hidden; };
  $('import').onclick = () => {
    let k;
    try {
      k = Key.fromWif($('wif-input').value);
      if (k.network !== network) throw new Error(`that key is for ${k.network}, this chain is ${network}`);
    } catch (e) { showError(`import: ${e.message}`); return; }
    $('wif-input').value = '';
    showError('');
    keep(k);
    onChange(k);
  };
  $('new-key').onclick = () => {
    if (!confirm(replaceWarning)) return;
    const k = Key.generate(network);
    keep(k);
    onChange(k);
  };
  return key;
}
