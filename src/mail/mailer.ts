import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { Transporter } from 'nodemailer';
import type { PlatformConfig } from '../config/config-schema.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import type { MailMessage, MailOutcome } from './mail-message.js';

/**
 * The `mailer` service: sends the platform's e-mails over SMTP (`mail.smtp_url`, `mail.from`). With no SMTP
 * configured each message is written to the log at INFO with `component: mailer`, so an operator still sees it.
 * The transport is made on first use and again whenever `mail.smtp_url` changes, so the key is hot.
 */
export class Mailer implements PlatformService {
  readonly name = 'mailer';
  readonly type = 'notification';
  readonly dependencies: readonly string[] = [];
  private transport: { url: string; transporter: Transporter } | undefined;
  private readonly counts = { sent: 0, failed: 0, logged: 0 };
  private readonly log: FastifyBaseLogger;
  /** The messages `queue` accepted, sent one after another; `waiting` counts those not yet settled. */
  private queued: Promise<void> = Promise.resolve();
  private waiting = 0;
  /** Set when a stop's drain ran out of time: what is still queued is dropped, not sent after the stop. */
  private dropping = false;

  constructor(
    private readonly config: () => PlatformConfig,
    log: FastifyBaseLogger,
  ) {
    this.log = log.child({ component: 'mailer' });
  }

  async start(): Promise<void> {
    this.dropping = false;
  }

  /**
   * Sends the queued messages first (a stopping platform exits once its services have stopped, and would lose
   * them), for at most `mail.timeout_seconds` and never past `server.shutdown_grace_seconds`; what is left then
   * is dropped, and how many is logged (a count: no recipient, no content).
   */
  async stop(): Promise<void> {
    if (this.waiting > 0) {
      const cfg = this.config();
      const budgetMs = Math.min(cfg.mail.timeout_seconds, cfg.server.shutdown_grace_seconds) * 1000;
      let timer: NodeJS.Timeout | undefined;
      const drained = await Promise.race([
        this.queued.then(() => true),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), budgetMs);
        }),
      ]);
      clearTimeout(timer);
      if (!drained) {
        this.dropping = true;
        this.log.warn(
          { unsent: this.waiting, waited_ms: budgetMs },
          `${this.waiting} queued e-mail(s) not sent before the mailer stopped`,
        );
      }
    }
    this.transport?.transporter.close();
    this.transport = undefined;
  }

  /**
   * Sends a message after those queued before it, without waiting for it: for callers whose own work must not
   * wait for a slow or unreachable SMTP server (up to `mail.timeout_seconds` per message). The mailer logs a
   * failed send; anything else goes to `onError`. A stop sends what is queued first (see `stop`).
   */
  queue(message: MailMessage, onError: (err: unknown) => void): void {
    this.waiting += 1;
    this.queued = this.queued
      .then(() => (this.dropping ? undefined : this.send(message)))
      .then(
        () => undefined,
        (err: unknown) => onError(err),
      )
      .finally(() => {
        this.waiting -= 1;
      });
  }

  /** Sends one message. Never throws: a delivery problem is counted, logged and reported as `failed`. */
  async send(message: MailMessage): Promise<MailOutcome> {
    const mail = this.config().mail;
    if (!mail.smtp_url) {
      this.counts.logged += 1;
      this.log.info(
        {
          kind: message.kind,
          to: message.to,
          subject: message.subject,
          body: message.loggedText ?? message.text,
        },
        `e-mail to ${message.to} (no SMTP configured, logged instead): ${message.subject}`,
      );
      return 'logged';
    }
    try {
      await (await this.transporter()).sendMail({
        from: mail.from,
        to: message.to,
        subject: message.subject,
        text: message.text,
      });
      this.counts.sent += 1;
      this.log.info({ kind: message.kind, to: message.to, subject: message.subject }, 'e-mail sent');
      return 'sent';
    } catch (err) {
      this.counts.failed += 1;
      this.log.warn(
        { kind: message.kind, to: message.to, error: (err as Error).message },
        'e-mail delivery failed',
      );
      return 'failed';
    }
  }

  /** Connects to the SMTP server and greets it (nodemailer's verify), so the report is real connectivity. */
  async health(): Promise<ServiceHealth> {
    if (!this.config().mail.smtp_url) {
      return {
        status: 'healthy',
        checks: [{ name: 'transport', status: 'pass', transport: 'log' }],
        details: { transport: 'log', ...this.counts },
      };
    }
    const start = performance.now();
    try {
      await (await this.transporter()).verify();
      return {
        status: 'healthy',
        checks: [
          {
            name: 'smtp_connectivity',
            status: 'pass',
            response_time_ms: Math.round((performance.now() - start) * 100) / 100,
          },
        ],
        details: { transport: 'smtp', ...this.counts },
      };
    } catch (err) {
      // Mail is auxiliary: the platform keeps serving without it, so this is a warning, not an outage.
      return {
        status: 'warning',
        checks: [
          {
            name: 'smtp_connectivity',
            status: 'fail',
            error: (err as Error).message,
            response_time_ms: Math.round((performance.now() - start) * 100) / 100,
          },
        ],
        details: { transport: 'smtp', ...this.counts },
      };
    }
  }

  metrics(): Record<string, number> {
    const { sent, failed, logged } = this.counts;
    return {
      requests_handled: sent + failed + logged,
      ...(sent + failed > 0 ? { error_rate: failed / (sent + failed) } : {}),
      emails_sent: sent,
      emails_failed: failed,
      emails_logged: logged,
    };
  }

  settings(): Record<string, unknown> {
    const mail = this.config().mail;
    return {
      transport: mail.smtp_url ? 'smtp' : 'log',
      smtp_url: mail.smtp_url ? '********' : '',
      from: mail.from,
      timeout_seconds: mail.timeout_seconds,
    };
  }

  /** nodemailer is loaded the first time a message goes over SMTP: most instances log their mail. */
  private async transporter(): Promise<Transporter> {
    const mail = this.config().mail;
    if (this.transport?.url === mail.smtp_url) return this.transport.transporter;
    const { default: nodemailer } = await import('nodemailer');
    // Checked again after the import: a concurrent caller may have made the same transport meanwhile.
    if (this.transport?.url === mail.smtp_url) return this.transport.transporter;
    this.transport?.transporter.close();
    const timeout = mail.timeout_seconds * 1000;
    this.transport = {
      url: mail.smtp_url,
      transporter: nodemailer.createTransport({
        url: mail.smtp_url,
        connectionTimeout: timeout,
        greetingTimeout: timeout,
        socketTimeout: timeout,
      }),
    };
    return this.transport.transporter;
  }
}
