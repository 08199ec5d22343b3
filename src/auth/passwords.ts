import { randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(hashed: string, password: string): Promise<boolean>;
  /**
   * Checks `password` against a hash of a random secret made with this hasher's own cost, and answers false:
   * the work spent for a name that belongs to no account is the work of a real check.
   */
  verifyDecoy(password: string): Promise<false>;
}

/** argon2id (the library's default algorithm) with the configured cost. */
export function createPasswordHasher(memoryCost: number, timeCost: number): PasswordHasher {
  const hashOf = (password: string) => hash(password, { memoryCost, timeCost, parallelism: 1 });
  const check = async (hashed: string, password: string) => {
    try {
      return await verify(hashed, password);
    } catch {
      return false;
    }
  };
  // Made once, on first use, with the configured cost (a fixed hash would have its own, maybe lower, cost).
  let decoy: Promise<string> | undefined;
  return {
    hash: hashOf,
    verify: check,
    async verifyDecoy(password) {
      decoy ??= hashOf(randomBytes(32).toString('base64url'));
      await check(await decoy, password);
      return false;
    },
  };
}
