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

  constructor(
    private readonly config: () => PlatformConfig,
    log: FastifyBaseLogger,
  ) {
    this.log = log.child({ component: 'mailer' });
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {
    this.transport?.transporter.close();
    this.transport = undefined;
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
