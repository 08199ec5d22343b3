/**
 * Where keyboard focus goes when what held it goes away. A form's button that turns disabled, a table row
 * removed by its own action (Unblock, Revoke), a whole section re-rendered after a save: the browser then drops
 * focus to the page body, and the next Tab starts over from the top. The focus keeper watches for exactly that
 * (the element that last had focus is gone, disabled or hidden, and nothing has focus) and puts focus on the
 * nearest meaningful thing instead: the result of the action (a success notice), the same row of the table, the
 * next control, or — when the whole page changed — the page heading, with a polite announcement.
 *
 * Components that know better move focus themselves before the keeper looks (in a layout effect, which runs
 * before the keeper's mutation callback): a secret shown once focuses its box, a form refused with field errors
 * focuses the first invalid field, the login form focuses its first field.
 */

const TABBABLE =
  'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), summary, [tabindex]:not([tabindex="-1"])';

let announcer: HTMLElement | null = null;

/** The shared polite live region; in the page from the start, as screen readers expect of a live region. */
function liveRegion(): HTMLElement {
  if (!announcer?.isConnected) {
    announcer = document.createElement('div');
    announcer.className = 'sr-only';
    announcer.id = 'announcer';
    announcer.setAttribute('aria-live', 'polite');
    announcer.setAttribute('role', 'status');
    document.body.append(announcer);
  }
  return announcer;
}

/** Says something to screen readers without moving focus. */
export function announce(text: string): void {
  const region = liveRegion();
  // Emptied first, so the same sentence twice is announced twice.
  region.textContent = '';
  setTimeout(() => {
    region.textContent = text;
  }, 50);
}

function visible(el: Element): boolean {
  return (el as HTMLElement).offsetParent !== null || el.getClientRects().length > 0;
}

function usable(el: Element): boolean {
  return (
    el.isConnected &&
    !(el as HTMLButtonElement).disabled &&
    !el.closest('[hidden], [inert], dialog:not([open])') &&
    visible(el)
  );
}

function tabbablesIn(root: ParentNode): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(TABBABLE)].filter(usable);
}

/** Focuses an element that is not focusable by itself (a notice, a heading) without adding it to the Tab order. */
export function focusElement(el: HTMLElement): void {
  if (!el.matches(TABBABLE) && !el.hasAttribute('tabindex')) el.tabIndex = -1;
  el.focus();
}

/** Focuses the first field marked invalid inside `root`; true when there was one. */
export function focusFirstInvalid(root: ParentNode | null | undefined): boolean {
  const field = root
    ? [...root.querySelectorAll<HTMLElement>('[aria-invalid="true"]')].find((el) => el.isConnected)
    : undefined;
  if (!field) return false;
  field.focus();
  return true;
}

/** Focuses the page heading and says what happened: `message`, else the result on the page, if any. */
export function focusPageHeading(message?: string): boolean {
  const heading = document.getElementById('page-title') ?? document.querySelector<HTMLElement>('main h1');
  if (!heading) return false;
  focusElement(heading);
  const said = message ?? document.querySelector('main .notice-good')?.textContent?.trim();
  if (said) announce(said);
  return true;
}

interface Remembered {
  el: HTMLElement;
  /** Its ancestors, nearest first, to find the nearest one that survived. */
  ancestors: HTMLElement[];
  /** When it sat in a table body: which body and which row. */
  row?: { body: HTMLElement; index: number };
}

let last: Remembered | null = null;

function remember(el: HTMLElement): void {
  const ancestors: HTMLElement[] = [];
  for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) ancestors.push(p);
  const tr = el.closest('tr');
  const body = tr?.parentElement;
  last =
    tr && body?.tagName === 'TBODY'
      ? { el, ancestors, row: { body, index: [...body.children].indexOf(tr) } }
      : { el, ancestors };
}

function lost(): boolean {
  const active = document.activeElement;
  return !active || active === document.body || active === document.documentElement;
}

/** The nearest new success notice inside `root`, the result of what was just done. */
function resultIn(root: ParentNode): HTMLElement | null {
  return root.querySelector<HTMLElement>('.notice-good');
}

/** Where focus should go now that `gone` lost it; null for the page heading. */
function replacement(gone: Remembered): { el: HTMLElement; plain: boolean } | null {
  const { el } = gone;
  // Still there but disabled or hidden (a button whose action is done): the result, else the next control.
  if (el.isConnected) {
    const form = el.closest('form');
    const result = (form && resultIn(form)) || resultIn(el.closest('main') ?? document.body);
    if (result) return { el: result, plain: true };
    const next = tabbablesIn(document.body).find(
      (c) => el.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING,
    );
    if (next) return { el: next, plain: false };
  }
  // A removed table row: the row now in its place (or the one before), else the table's scroll frame.
  if (gone.row?.body.isConnected) {
    const rows = [...gone.row.body.children];
    for (const tr of [rows[gone.row.index], rows[gone.row.index - 1]]) {
      const target = tr ? tabbablesIn(tr)[0] : undefined;
      if (target) return { el: target, plain: false };
    }
  }
  // The nearest surviving part of the page below <main>: itself when it takes focus (a table's frame), its
  // result, else its first control.
  for (const a of gone.ancestors) {
    if (!a.isConnected) continue;
    if (a.tagName === 'MAIN' || a.closest('main') === null) break;
    if (a.matches(TABBABLE) && usable(a)) return { el: a, plain: false };
    const result = resultIn(a);
    if (result) return { el: result, plain: true };
    const target = tabbablesIn(a)[0];
    if (target) return { el: target, plain: false };
  }
  return null;
}

function rescue(settled = false): void {
  const gone = last;
  if (!gone || usable(gone.el)) return;
  // A dialog closing: the browser puts focus back on the button that opened it, after this point. Look again
  // once it has, for the case where that button is gone too (its row removed by the confirmed action).
  if (!settled && gone.el.closest('dialog')) {
    setTimeout(() => rescue(true), 0);
    return;
  }
  // Lost: nothing has focus, or focus still sits on the element that was disabled or removed (the browser
  // takes it away only at its next rendering step, with no change left for the observer to report).
  const stuck = document.activeElement === gone.el && (gone.el as HTMLButtonElement).disabled === true;
  if (!lost() && !stuck) return;
  const target = replacement(gone);
  if (!target) focusPageHeading();
  else if (target.plain) focusElement(target.el);
  else target.el.focus();
}

let installed = false;

/** Starts the keeper once for the whole app. */
export function installFocusKeeper(): void {
  if (installed) return;
  installed = true;
  liveRegion();
  document.addEventListener('focusin', (e) => {
    const target = e.target as HTMLElement | null;
    if (target && target !== document.body) remember(target);
  });
  // Focus dropped without a change to the page (the browser's own fix-up of a disabled element): look again
  // once it has settled.
  document.addEventListener('focusout', (e) => {
    if (!(e as FocusEvent).relatedTarget) setTimeout(() => rescue(), 0);
  });
  new MutationObserver(() => rescue()).observe(document.body, {
    subtree: true,
    childList: true,
    attributes: true,
    attributeFilter: ['disabled', 'hidden', 'inert', 'class', 'open'],
  });
}
