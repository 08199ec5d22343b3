import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { startSmtpSink } from './smtp-sink.js';

type Sink = Awaited<ReturnType<typeof startSmtpSink>>;

describe('e-mail over SMTP', () => {
  let t: TestPlatform;
  let sink: Sink;
  let admin: string;
  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startPlatform({ mail: { smtp_url: sink.url, from: 'Platform <noreply@platform.test>' } });
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await sink.close();
  }, 60_000);

  const mailer = async () => (await t.request('GET', '/api/v1/services/mailer', { token: admin })).data.data;

  it('sends the welcome e-mail when send_welcome_email is true, without the password', async () => {
    const res = await t.request('POST', '/api/v1/admin/users', {
      token: admin,
      body: {
        username: 'welcomed',
        email: 'welcomed@example.test',
        password: 'welcome-password-1',
        full_name: 'Wendy Welcome',
        send_welcome_email: true,
        force_password_change: true,
      },
    });
    expect(res.statusCode).toBe(201);
    expect(res.data.data.email_delivery).toBe('sent');
    const mail = await sink.waitFor('welcomed@example.test');
    expect(mail.from).toBe('noreply@platform.test');
    expect(mail.subject).toBe('Welcome to the platform');
    expect(mail.body).toContain('Hello Wendy Welcome,');
    expect(mail.body).toContain('Your username is: welcomed');
    expect(mail.body).toContain('choose a new password');
    expect(mail.body).not.toContain('welcome-password-1');
  });

  it('sends no e-mail when send_welcome_email is left out', async () => {
    const res = await t.request('POST', '/api/v1/admin/users', {
      token: admin,
      body: { username: 'unwelcomed', email: 'unwelcomed@example.test', password: 'long-enough-1' },
    });
    expect(res.data.data.email_delivery).toBe('not_requested');
    await expect(sink.waitFor('unwelcomed@example.test', 300)).rejects.toThrow();
  });

  it('sends the suspension notice with the reason and the end of the suspension when notify_user is true', async () => {
    const u = await t.createUser('notified');
    const res = await t.request('POST', `/api/v1/admin/users/${u.id}/suspend`, {
      token: admin,
      body: { reason: 'Spam reports', duration_days: 3, notify_user: true },
    });
    expect(res.data.data.email_delivery).toBe('sent');
    const mail = await sink.waitFor('notified@example.test');
    expect(mail.subject).toBe('Your account has been suspended');
    expect(mail.body).toContain('Reason: Spam reports');
    expect(mail.body).toContain(`The suspension ends on ${res.data.data.user.metadata.suspended_until}`);
  });

  it('sends the temporary password in the reset e-mail over SMTP when send_email is true', async () => {
    const u = await t.createUser('reset-by-mail');
    const res = await t.request('POST', `/api/v1/admin/users/${u.id}/reset-password`, {
      token: admin,
      body: { temporary_password: 'Mailed-Temp-Pass-9', force_change_on_login: true, send_email: true },
    });
    expect(res.data.data.email_delivery).toBe('sent');
    const mail = await sink.waitFor('reset-by-mail@example.test');
    expect(mail.subject).toBe('Your password has been reset');
    expect(mail.body).toContain('Your temporary password is: Mailed-Temp-Pass-9');
    expect(mail.body).toContain('choose a new password');
  });

  it('reports real SMTP connectivity and counts sent e-mails in the mailer service', async () => {
    const view = await mailer();
    expect(view).toMatchObject({ name: 'mailer', status: 'running', health: 'healthy' });
    expect(view.config).toMatchObject({ transport: 'smtp', smtp_url: '********' });
    expect(view.metrics.emails_sent).toBe(sink.received.length);
    expect(view.metrics.emails_failed).toBe(0);
    const components = await t.request('GET', '/api/v1/components/health', { token: admin });
    const component = components.data.data.components.find((c: { name: string }) => c.name === 'mailer');
    expect(component.checks[0]).toMatchObject({ name: 'smtp_connectivity', status: 'pass' });
  });

  it('answers failed when the SMTP server refuses, counts it, and reports the server down once it is gone', async () => {
    const refusing = await startSmtpSink({ rejectRecipients: true });
    await t.request('PUT', '/api/v1/config', { token: admin, body: { mail: { smtp_url: refusing.url } } });
    const res = await t.request('POST', '/api/v1/admin/users', {
      token: admin,
      body: {
        username: 'bounced',
        email: 'bounced@example.test',
        password: 'long-enough-1',
        send_welcome_email: true,
      },
    });
    expect(res.statusCode).toBe(201);
    expect(res.data.data.email_delivery).toBe('failed');
    expect((await mailer()).metrics.emails_failed).toBe(1);

    await refusing.close();
    // Health checks answer for up to a second (docs/operations.md), so the change shows within one.
    expect(await eventually(async () => (await mailer()).health === 'warning', 5000)).toBe(true);
    await t.request('PUT', '/api/v1/config', { token: admin, body: { mail: { smtp_url: sink.url } } });
    expect(await eventually(async () => (await mailer()).health === 'healthy', 5000)).toBe(true);
  });
});

describe('e-mail without SMTP', () => {
  let t: TestPlatform;
  let admin: string;
  const lines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    t = await startPlatform(
      { logging: { level: 'info' } },
      { logStream: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) } },
    );
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  it('writes each e-mail to the log at INFO with component mailer, leaving out the temporary password', async () => {
    const u = await t.createUser('logged-mail');
    const res = await t.request('POST', `/api/v1/admin/users/${u.id}/reset-password`, {
      token: admin,
      body: { temporary_password: 'Never-In-Logs-42', send_email: true },
    });
    expect(res.data.data.email_delivery).toBe('logged');
    const line = lines.find((l) => l['component'] === 'mailer' && l['kind'] === 'password_reset');
    expect(line).toMatchObject({
      level: 30,
      to: 'logged-mail@example.test',
      subject: 'Your password has been reset',
    });
    expect(String(line?.['body'])).toContain('withheld from the log');
    expect(JSON.stringify(lines)).not.toContain('Never-In-Logs-42');

    await t.request('POST', '/api/v1/admin/users', {
      token: admin,
      body: {
        username: 'logged-welcome',
        email: 'lw@example.test',
        password: 'long-enough-1',
        send_welcome_email: true,
      },
    });
    expect(lines.find((l) => l['component'] === 'mailer' && l['kind'] === 'welcome')).toMatchObject({
      to: 'lw@example.test',
      subject: 'Welcome to the platform',
    });
    const view = (await t.request('GET', '/api/v1/services/mailer', { token: admin })).data.data;
    expect(view).toMatchObject({ health: 'healthy', config: { transport: 'log' } });
    expect(view.metrics.emails_logged).toBe(2);
  });
});
