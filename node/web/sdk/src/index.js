// index.js: the SDK's public surface (re-exports only). See README.md for every call.
export { Chain, txidOf } from './chain.js';
export { ChainError } from './errors.js';
export { Key } from './key.js';
export { verifyMessage, recoverAddress, recoverPublicKey, messageHash, MAGIC } from './message.js';
export { parseAddress, addressFromPublicKey, hash160, NETWORKS } from './address.js';
