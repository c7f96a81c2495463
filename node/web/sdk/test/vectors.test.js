// vectors.test.js: the Rust side's own fixed vectors (runtime/chain/src/keys/signed_message.rs and
// address.rs tests, tests/tests/channels.rs `js_sdk_move_vector_text_and_signature`,
// modules/channel/src/message.rs, node/client/src/relay.rs `hello_vector`), reproduced byte for
// byte: keys, addresses, message hashes, signatures, a game tag, an RPS commitment (v2), a
// channel move's text, a relay hello.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { base58check, hash160 } from '../src/keys/address.js';
import { signWithSecret } from '../src/keys/message.js';
import { Key, verifyMessage, recoverAddress, recoverPublicKey, messageHash, parseAddress, txidOf,
  moveMessage, finalMessage, checkpointMessage, gameTag, gameTagText, stateHash, rpsCommitment, rpsReveal, encodeMove, parseSignedMove,
  RPS_STATE_BYTES, relayHelloText, relayHelloQuery } from '../src/index.js';

const BITCOIN_MAGIC = 'Bitcoin Signed Message:\n';

// Fixed Divi testnet vector (signed_message.rs, `fixed_divi_testnet_vector`).
const DIVI_WIF = 'cPyzSehsdPeYU2aqFJ7jhvGmJBiciscQKdVMWkxhhK9pTLQVf7pU';
const DIVI_ADDRESS = 'y115R6b1mLc8CCZCi7iqZZvQMsjArEYWgC';
const DIVI_MSG = '{"chain_id":"gamechain-dev","from":"y115R6b1mLc8CCZCi7iqZZvQMsjArEYWgC","nonce":0,"action":{"type":"faucet","token":"GOLD"}}';
const DIVI_SIG = 'H5mfcBmoLm8QvbOKB0s58Y1rryFKLuoU5NR5xfFVHNdeJmRH4CsPdZEbDlGxp5RhuF8/Nov/Adp5W8NxKi8I6LQ=';
const DIVI_MAINNET_WIF = 'YQKy1HyauEuqA4E6KFTdDDicaTJ1BaHmvhfqQVc9SPobrQ5161Nb';
const DIVI_MAINNET_ADDRESS = 'D9AL6G6cNg6d3xMm3PR6huFekteMLYd7Xp';

function bitcoinSecret(wif) {
  const payload = base58check.decode(wif);
  assert.equal(payload[0], 0x80);
  return payload.slice(1, 33);
}
const bitcoinAddress = (pub) => base58check.encode(Uint8Array.of(0, ...hash160(pub)));

test('the fixed Divi testnet vector: WIF, address, signature, recovery', () => {
  const key = Key.fromWif(DIVI_WIF);
  assert.equal(key.network, 'testnet');
  assert.equal(key.address, DIVI_ADDRESS);
  assert.equal(key.toWif(), DIVI_WIF);
  assert.equal(key.signMessage(DIVI_MSG), DIVI_SIG);
  assert.equal(recoverAddress('testnet', DIVI_MSG, DIVI_SIG), DIVI_ADDRESS);
  assert.equal(verifyMessage(DIVI_ADDRESS, DIVI_MSG, DIVI_SIG), true);
  const secret = sha256(new TextEncoder().encode('gamechain divi test vector'));
  assert.equal(Key.fromSecret(secret, 'testnet').toWif(), DIVI_WIF);
  const main = Key.fromWif(DIVI_MAINNET_WIF);
  assert.equal(main.network, 'mainnet');
  assert.equal(main.address, DIVI_MAINNET_ADDRESS);
  assert.equal(Key.fromSecret(secret, 'mainnet').toWif(), DIVI_MAINNET_WIF);
  // The signature does not depend on the network.
  assert.equal(verifyMessage(DIVI_MAINNET_ADDRESS, DIVI_MSG, DIVI_SIG), true);
  assert.equal(txidOf(DIVI_MSG), bytesToHex(sha256(new TextEncoder().encode(DIVI_MSG))));
});

test('bitcoinjs-message magic hashes (the Rust test\'s external vectors)', () => {
  assert.equal(bytesToHex(messageHash('', BITCOIN_MAGIC)), '80e795d4a4caadd7047af389d9f7f220562feb6196032e2131e10563352c4bcc');
  assert.equal(bytesToHex(messageHash('Vires is Numeris', BITCOIN_MAGIC)), 'f8a5affbef4a3241b19067aa694562f64f513310817297089a8929a930f4f933');
});

test('bitcoinjs-message README signature and fixtures', () => {
  const sk = bitcoinSecret('L4rK1yDtCWekvXuE6oXD9jCYfFNV2cWRpVuPLBcCU2z8TrisoyY1');
  const msg = 'This is an example of a signed message.';
  const sig = signWithSecret(sk, msg, BITCOIN_MAGIC);
  assert.equal(sig, 'H9L5yLFjti0QTHhPyFrZCT1V/MMnBtXKmoiKDZ78NDBjERki6ZTQZdSMCtkgoNmp17By9ItJr8o7ChX0XxY91nk=');
  assert.equal(bitcoinAddress(recoverPublicKey(msg, sig, BITCOIN_MAGIC)), '1F3sAm6ZtwLAUnj7d38pGFxtP3RVEvtsbV');

  const one = new Uint8Array(32); one[31] = 1;
  assert.equal(signWithSecret(one, 'vires is numeris', BITCOIN_MAGIC),
    'IF8nHqFr3K2UKYahhX3soVeoW8W1ECNbr0wfck7lzyXjCS5Q16Ek45zyBuy1Fiy9sTPKVgsqqOuPvbycuVSSVl8=');
  const v = 'H8JawPtQOrybrSP1WHQnQPr67B9S3qrxBrl1mlzoTJOSHEpmnF7D3+t+LX0Xei9J20B5AIdPbeL3AaTBZ4N3bY0=';
  assert.equal(bitcoinAddress(recoverPublicKey('vires is numeris', v, BITCOIN_MAGIC)), '1PMycacnJaSqwwJqjawXBErnLsZ7RkXUAs');
  assert.notEqual(bitcoinAddress(recoverPublicKey('foobar', v, BITCOIN_MAGIC)), '1PMycacnJaSqwwJqjawXBErnLsZ7RkXUAs');
  assert.throws(() => recoverPublicKey('vires is numeris', 'G' + v.slice(1), BITCOIN_MAGIC), /header byte 27/);
});

test('the seed\'s addresses parse as testnet', () => {
  for (const a of ['xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7', 'xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki']) {
    assert.equal(parseAddress(a).network, 'testnet');
  }
});

test('verifyMessage says false for each failure, never throws', () => {
  const key = Key.fromSecret(new Uint8Array(32).fill(9));
  const other = Key.fromSecret(new Uint8Array(32).fill(8));
  const sig = key.signMessage('hello');
  assert.equal(sig.length, 88);
  assert.equal(verifyMessage(key.address, 'hello', sig), true);
  assert.equal(verifyMessage(other.address, 'hello', sig), false);
  assert.equal(verifyMessage(key.address, 'hello!', sig), false);
  assert.equal(verifyMessage(key.address, 'hello', 'not base64!'), false);
  assert.equal(verifyMessage(key.address, 'hello', sig.slice(0, 86)), false);
  assert.equal(verifyMessage('n0pe', 'hello', sig), false);
  assert.equal(verifyMessage(key.address, 'hello', 'A'.repeat(10000)), false);
  // The high-S twin (r, n - s) with the other recovery id recovers the same key: refused.
  const raw = Uint8Array.from(atob(sig), (c) => c.charCodeAt(0));
  const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  const s = BigInt('0x' + bytesToHex(raw.slice(33)));
  const twin = Uint8Array.from(raw);
  twin[0] = 31 + ((raw[0] - 31) ^ 1);
  twin.set(Uint8Array.from((n - s).toString(16).padStart(64, '0').match(/../g), (h) => parseInt(h, 16)), 33);
  assert.throws(() => recoverPublicKey('hello', btoa(String.fromCharCode(...twin))), /high S/);
  assert.equal(verifyMessage(key.address, 'hello', btoa(String.fromCharCode(...twin))), false);
  // A message over 252 bytes uses the 3-byte length form.
  const long = 'x'.repeat(70000);
  assert.equal(verifyMessage(key.address, long, key.signMessage(long)), true);
});

test('keys: WIF round trip, prefixes, refusals', () => {
  for (const network of ['mainnet', 'testnet']) {
    const k = Key.generate(network);
    assert.equal(Key.fromWif(k.toWif()).address, k.address);
    assert.equal(k.address.length, 34);
    assert.match(k.address, network === 'mainnet' ? /^D/ : /^[xy]/);
    assert.equal(k.toWif().length, 52);
  }
  const k = Key.fromSecret(new Uint8Array(32).fill(7));
  assert.throws(() => Key.fromWif(k.address), /length/);
  assert.throws(() => Key.fromSecret(new Uint8Array(32)), /not a valid/);
  const uncompressed = base58check.encode(Uint8Array.of(239, ...new Uint8Array(32).fill(7)));
  assert.throws(() => Key.fromWif(uncompressed), /uncompressed/);
  assert.throws(() => Key.fromWif('x'.repeat(65)), /base58/);
  assert.ok(!JSON.stringify(k).includes(k.toWif()));
  assert.ok(!String(k).includes(k.toWif()));
});

// tests/tests/channels.rs `js_sdk_move_vector_text_and_signature` asserts these same strings.
test('the channel move vector: the game tag, RPS move 0 (commitment v2) text and signature, as the Rust code makes them', () => {
  const key = Key.fromWif(DIVI_WIF);
  const domain = { chain: '9b5e3e0a7c1d2f4e6a8b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7', module: 'channel' };
  const tag = gameTag(domain, '0000000000000003');
  assert.equal(bytesToHex(tag), '48381642f39e82f5537bcfa8b0a163b83736906f75dbefbb00bd05f07ae3d570');
  // rps_rules' initial state: the tag, moves made 0, two empty commitments, two hidden choices.
  const initial = new Uint8Array(RPS_STATE_BYTES);
  initial.set(tag, 0);
  initial[97] = 0xff;
  initial[98] = 0xff;
  const prev = stateHash(initial);
  assert.equal(prev, '196ceaab3c82c2e2b89ada94860cb2820733c139bf49111b43effb7144741c7b');
  const data = rpsCommitment(tag, 0, 1, new Uint8Array(32).fill(7));
  const text = moveMessage(domain, '0000000000000003', 0, prev, key.address, data);
  assert.equal(text, [
    'gamechain channel move v1',
    'chain: 9b5e3e0a7c1d2f4e6a8b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7',
    'module: channel',
    'game: 0000000000000003',
    'move: 0',
    'prev: 196ceaab3c82c2e2b89ada94860cb2820733c139bf49111b43effb7144741c7b',
    'mover: y115R6b1mLc8CCZCi7iqZZvQMsjArEYWgC',
    'data: c043134a41bb8b0eae3f6946c64649cf26924a02637c82d7621adc5f0c3674d9',
  ].join('\n'));
  assert.equal(moveMessage(domain, '0000000000000003', 0, prev, key.address, bytesToHex(data).toUpperCase()), text);
  assert.equal(key.signMessage(text), 'HytL+TaEUMARnZbq7GG61lSMrBA1emhr1EgjUyaIRmU3FbJy1VryZ/9QmWsORNRANDp1Qlxe/maUSkJnp85+3aY=');
  // The commitment binds the seat and the game: the other seat's, or another game's, differs.
  assert.notEqual(bytesToHex(rpsCommitment(tag, 1, 1, new Uint8Array(32).fill(7))), bytesToHex(data));
  assert.notEqual(bytesToHex(rpsCommitment(gameTag(domain, '0000000000000004'), 0, 1, new Uint8Array(32).fill(7))), bytesToHex(data));
  assert.equal(bytesToHex(rpsReveal(1, new Uint8Array(32).fill(7))), '01' + '07'.repeat(32));
  // modules/channel/src/message.rs `a_move_text_is_fixed`.
  const d = { chain: 'ab', module: 'channel' };
  assert.equal(moveMessage(d, '0000000000000001', 3, 'cd', 'yAlice', Uint8Array.of(4)),
    'gamechain channel move v1\nchain: ab\nmodule: channel\ngame: 0000000000000001\nmove: 3\nprev: cd\nmover: yAlice\ndata: 04');
  assert.equal(finalMessage(d, 'g', 'ef', 9), 'gamechain channel final v2\nchain: ab\nmodule: channel\ngame: g\nstate: ef\nvalid_until_ms: 9');
  assert.equal(gameTagText(d, '0000000000000001'), 'gamechain channel game v1\nchain: ab\nmodule: channel\ngame: 0000000000000001');
  assert.equal(bytesToHex(gameTag(d, '0000000000000001')), bytesToHex(sha256(new TextEncoder().encode(gameTagText(d, '0000000000000001')))));
  assert.equal(checkpointMessage(d, 'g', 4, 'ef'), 'gamechain channel checkpoint v1\nchain: ab\nmodule: channel\ngame: g\nmoves: 4\nstate: ef');
  assert.equal(stateHash(new Uint8Array(0)), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  // sdk-guest/src/rules.rs `encode_move`: u64 n, u8 mover, u32 state length, state, data (LE).
  assert.equal(bytesToHex(encodeMove(7, 1, Uint8Array.of(0x61, 0x62, 0x63), Uint8Array.of(0x78, 0x79))), '0700000000000000' + '01' + '03000000' + '616263' + '7879');
});

test('signed moves are parsed with bounds', () => {
  assert.deepEqual(parseSignedMove('{"n":0,"data":"0A","sig":"x"}'), { n: 0, data: '0a', sig: 'x' });
  for (const [bad, code] of [
    ['nope', 'malformed'], ['[]', 'malformed'], ['{"n":-1,"data":"","sig":"x"}', 'malformed'],
    ['{"n":1.5,"data":"","sig":"x"}', 'malformed'], ['{"n":0,"data":"abc","sig":"x"}', 'malformed'],
    ['{"n":0,"data":"zz","sig":"x"}', 'malformed'], ['{"n":0,"data":"00","sig":""}', 'malformed'],
    [JSON.stringify({ n: 0, data: '00'.repeat(1025), sig: 'x' }), 'too_large'],
    [JSON.stringify({ n: 0, data: '00', sig: 'x'.repeat(201) }), 'malformed'],
    ['x'.repeat(8193), 'too_large'],
  ]) {
    assert.throws(() => parseSignedMove(bad), (e) => e.name === 'ChannelError' && e.code === code, bad.slice(0, 40));
  }
});

test('a relay hello: the text and signature of node/client/src/relay.rs `hello_vector`', () => {
  const key = Key.fromWif(DIVI_WIF);
  const chain = 'ab'.repeat(32);
  const text = relayHelloText(chain, '0000000000000007', 1, 1700000000123);
  assert.equal(text, `gamechain relay hello v1\nchain: ${chain}\nmodule: channel\ngame: 0000000000000007\nseat: 1\ntime_ms: 1700000000123`);
  const sig = 'H+/YuQWsuBCS2ch5rP2rgNTadC7jKrpOeYyrxxtLdXjbeKchtTGlVDU93pIlJ0GkgnwAMB49uZcE7hE5bgiy3/A=';
  assert.equal(key.signMessage(text), sig);
  // The query the Rust client sends too (base64 percent-encoded).
  assert.equal(relayHelloQuery(key, chain, '0000000000000007', 1, 1700000000123),
    'seat=1&time=1700000000123&sig=H%2B%2FYuQWsuBCS2ch5rP2rgNTadC7jKrpOeYyrxxtLdXjbeKchtTGlVDU93pIlJ0GkgnwAMB49uZcE7hE5bgiy3%2FA%3D');
  // Two hellos asked at once never share a time (the node takes each once).
  const [q1, q2] = [relayHelloQuery(key, chain, 'g', 0), relayHelloQuery(key, chain, 'g', 0)];
  assert.notEqual(q1, q2);
});
