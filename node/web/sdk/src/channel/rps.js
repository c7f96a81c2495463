// rps.js: rock-paper-scissors on a Channel (modules/rps_rules, docs/channels.md): moves 0 and 1
// commit `sha256("gamechain rps commit v2" ‖ game tag ‖ seat ‖ choice ‖ salt)` with a fresh random
// 32-byte salt (crypto.getRandomValues), moves 2 and 3 reveal `choice ‖ salt`. The commitment is
// bound to the game and the seat, so the other seat cannot copy it. The salt and choice are kept in
// the channel's store before the commit is signed, so a reload can still reveal, and a commit is
// never made twice.

import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { ChannelError } from './channel.js';

/** Choice numbers: 0 rock, 1 paper, 2 scissors. */
export const RPS_CHOICES = Object.freeze(['rock', 'paper', 'scissors']);

function checkChoice(choice) {
  if (choice !== 0 && choice !== 1 && choice !== 2) throw new RangeError('choice must be 0 (rock), 1 (paper) or 2 (scissors)');
}

function checkSalt(salt) {
  if (!(salt instanceof Uint8Array) || salt.length !== 32) throw new TypeError('salt must be 32 bytes');
}

/** The text every commitment starts with (Rust `rps_rules::COMMIT_DOMAIN`). */
export const RPS_COMMIT_DOMAIN = 'gamechain rps commit v2';
const COMMIT_DOMAIN_BYTES = new TextEncoder().encode(RPS_COMMIT_DOMAIN);

/**
 * `sha256("gamechain rps commit v2" ‖ tag ‖ seat ‖ choice ‖ salt)`: the commitment seat `seat`
 * signs as its move (move 0 for seat 0, 1 for seat 1) in the game tagged `tag` (32 bytes, the
 * channel's `tag`), Rust `rps_rules::commitment(tag, seat, choice, salt)`.
 */
export function rpsCommitment(tag, seat, choice, salt) {
  if (!(tag instanceof Uint8Array) || tag.length !== 32) throw new TypeError('tag must be the 32-byte game tag');
  if (seat !== 0 && seat !== 1) throw new RangeError('seat must be 0 or 1');
  checkChoice(choice);
  checkSalt(salt);
  return sha256(Uint8Array.of(...COMMIT_DOMAIN_BYTES, ...tag, seat, choice, ...salt));
}

/** `choice ‖ salt`: the reveal signed as move 2 or 3 (Rust `rps_rules::reveal`). */
export function rpsReveal(choice, salt) {
  checkChoice(choice);
  checkSalt(salt);
  return Uint8Array.of(choice, ...salt);
}

/** Length of an RPS state: tag (32), moves made (1), two commitments (64), two choices (2). */
export const RPS_STATE_BYTES = 99;

/** The choices an RPS state shows (`[seat 0's, seat 1's]`, null until revealed). */
export function rpsChoices(state) {
  if (!(state instanceof Uint8Array) || state.length !== RPS_STATE_BYTES) return [null, null];
  return [state[97], state[98]].map((c) => (c <= 2 ? c : null));
}

/** An RPS game on a loaded {@link Channel} (its rules must be `rps_rules`). */
export class Rps {
  /** @param {import('./channel.js').Channel} channel */
  constructor(channel) {
    this.channel = channel;
  }

  /** `'commit'` (moves 0–1), `'reveal'` (moves 2–3) or `'over'`. */
  get phase() {
    if (this.channel.over) return 'over';
    return this.channel.n < 2 ? 'commit' : 'reveal';
  }

  /** This seat's choice (0–2) once committed here, else null. */
  get myChoice() {
    const s = this.channel.getData('rps');
    return s ? s.choice : null;
  }

  /**
   * Commits `choice` (0–2): a fresh salt from `crypto.getRandomValues`, kept with the choice in
   * the store, then the commitment played (signed, kept, posted). A second call re-sends the commit
   * signed already (another choice is ChannelError `already_signed`).
   */
  async commit(choice, options) {
    checkChoice(choice);
    const c = this.channel;
    if (c.seat === null) throw new ChannelError('not_a_player', 'this key plays no seat of the game');
    // Another tab on the same store may have committed (and kept its salt) already.
    await c.serial(() => c.sync());
    const kept = c.getData('rps');
    const signed = kept && c.saved.mine[`${c.seat}:${c.hashes[c.seat]}`];
    if (kept && (signed || kept.choice === choice)) {
      const salt = hexToBytes(kept.salt);
      if (kept.choice !== choice) {
        const err = new ChannelError('already_signed', `you committed to ${RPS_CHOICES[kept.choice]} already`);
        await c.play(rpsCommitment(c.tag, c.seat, kept.choice, salt), options).catch(() => {});
        throw err;
      }
      return c.play(rpsCommitment(c.tag, c.seat, choice, salt), options);
    }
    if (c.n !== c.seat) throw new ChannelError('not_your_turn', `the commit of seat ${c.seat} is move ${c.seat}; the game is at move ${c.n}`);
    const salt = new Uint8Array(32);
    globalThis.crypto.getRandomValues(salt);
    await c.setData('rps', { choice, salt: bytesToHex(salt) });
    return c.play(rpsCommitment(c.tag, c.seat, choice, salt), options);
  }

  /** Reveals the kept choice and salt (move 2 for seat 0, move 3 for seat 1). */
  async reveal(options) {
    const c = this.channel;
    await c.serial(() => c.sync());
    const kept = c.getData('rps');
    if (!kept) throw new ChannelError('no_move', 'no commitment of this seat is kept here: nothing to reveal');
    return c.play(rpsReveal(kept.choice, hexToBytes(kept.salt)), options);
  }

  /** Reveals when it is this seat's turn to (both commits seen); resolves to whether it did. */
  async step(options) {
    const c = this.channel;
    if (!c.myTurn || c.n < 2 || !c.getData('rps')) return false;
    await this.reveal(options);
    return true;
  }

  /** The choices known (`[seat 0's, seat 1's]`, null when hidden) and, when over, the winner seat or null. */
  result() {
    const c = this.channel;
    return { choices: rpsChoices(c.state), over: c.over, winner: c.over ? c.winner : null };
  }
}
