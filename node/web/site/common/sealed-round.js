// sealed-round.js: what the pages of sealed games (/play/sealed-rps/, /play/auction/) share about
// a round (docs/sealed-moves.md): until when a move may still be handed in, the chain's head read
// again just before sealing, and telling a "round is full" refusal.

/**
 * Whether a move may still be handed in with the chain's head at `h`: below round − 2. A move must
 * land in a block before the round (block `round` opens every sealed move and settles before any
 * transaction), and one sent at round − 2 might not make block round − 1.
 */
export const canSendAt = (h, round) => h < round - 2;

/** The chain's head read again through `chain`, never below `seen` (the last head the page saw, kept when the node does not answer). */
export async function freshHeight(chain, seen) {
  try {
    const s = await chain.status();
    return Math.max(seen, s.height);
  } catch {
    return seen;
  }
}

/** Whether receipt `r` is a refusal because the round is full (64 sealed calls or their fuel across every game). */
export const roundFull = (r) => Boolean(r && !r.ok && /already holds \d+ sealed calls/.test(r.error ?? ''));
