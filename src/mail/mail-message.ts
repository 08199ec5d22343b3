/** One e-mail the platform sends to a user. */
export interface MailMessage {
  kind: 'welcome' | 'suspension' | 'password_reset' | 'subscription_disabled';
  to: string;
  subject: string;
  text: string;
  /**
   * What the log form shows instead of `text`, for a message that carries a secret (a temporary password):
   * secrets go over SMTP only, never into a log.
   */
  loggedText?: string;
}

/** `sent`: accepted by the SMTP server; `logged`: no SMTP configured, written to the log; `failed`: SMTP refused or was unreachable. */
export type MailOutcome = 'sent' | 'logged' | 'failed';
