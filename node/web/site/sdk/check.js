// check.js: /sdk/: loads the bundle and says whether it works here (a fresh key signs and verifies).
import { loadSdk } from '/common/sdk-loader.js';

const { Key, verifyMessage } = await loadSdk();
const k = Key.generate('testnet');
const ok = verifyMessage(k.address, 'hello', k.signMessage('hello'));
document.getElementById('sdk-state').textContent = ok
  ? `The SDK works in this browser: a new key ${k.address} signed and verified a message.`
  : 'The SDK loaded but a signature did not verify.';
