import { afterEach, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// Two administrators removing each other at the same moment: each request alone leaves one administrator, so
// each passes a check made before the other's change. The platform must still keep one.
describe('the last active administrator, under concurrent changes', { timeout: 30_000 }, () => {
  let t: TestPlatform | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const twoAdmins = async () => {
    t = await startPlatform();
    const first = await t.adminToken();
    const firstId = (await t.request('GET', '/api/v1/auth/me', { token: first })).data.data.id as string;
    const second = await t.createUser('second-admin', ['admin']);
    // Both credentials already checked once (cached), so both requests pass authentication together.
    for (const token of [first, second.access]) await t.request('GET', '/api/v1/admin/users', { token });
    return { t, first: { id: firstId, access: first }, second };
  };
  const activeAdmins = async (p: TestPlatform, token: string) =>
    (await p.request('GET', '/api/v1/admin/users?role=admin&status=active', { token })).data.data.pagination
      .total as number;

  it('deleting each other: one deletion is refused with last_active_admin', async () => {
    const { t: p, first, second } = await twoAdmins();
    const answers = await Promise.all([
      p.request('DELETE', `/api/v1/admin/users/${second.id}`, { token: first.access }),
      p.request('DELETE', `/api/v1/admin/users/${first.id}`, { token: second.access }),
    ]);
    // One is made; the other is refused: as the last administrator (409), or because its caller is gone (401).
    expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(1);
    const survivor = answers[0]!.statusCode === 200 ? first : second;
    expect(await activeAdmins(p, survivor.access)).toBe(1);
  });

  it('demoting and suspending each other: one change is refused, one administrator stays', async () => {
    const { t: p, first, second } = await twoAdmins();
    const answers = await Promise.all([
      p.request('PATCH', `/api/v1/admin/users/${second.id}`, {
        token: first.access,
        body: { roles: ['user'] },
      }),
      p.request('POST', `/api/v1/admin/users/${first.id}/suspend`, {
        token: second.access,
        body: { reason: 'race' },
      }),
    ]);
    // One is made; the other is refused: as the last administrator (409), or because its caller is no longer
    // an administrator (403).
    expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(1);
    const survivor = answers[0]!.statusCode === 200 ? first : second;
    expect(await activeAdmins(p, survivor.access)).toBe(1);
  });
});
