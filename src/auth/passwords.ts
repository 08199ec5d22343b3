import { hash, verify } from '@node-rs/argon2';

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(hashed: string, password: string): Promise<boolean>;
}

/** argon2id (the library's default algorithm) with the configured cost. */
export function createPasswordHasher(memoryCost: number, timeCost: number): PasswordHasher {
  return {
    hash: (password) => hash(password, { memoryCost, timeCost, parallelism: 1 }),
    async verify(hashed, password) {
      try {
        return await verify(hashed, password);
      } catch {
        return false;
      }
    },
  };
}
