import type { RefObject } from 'preact';
import { useLayoutEffect } from 'preact/hooks';
import type { ApiError } from '../api/api-error.ts';
import { focusFirstInvalid } from '../focus.ts';

/**
 * When an action is refused with field errors (a 422 or CONFIG_VALIDATION_ERROR naming fields), focus moves to
 * the first field marked invalid in the form, whose message is tied to it with aria-describedby. A layout
 * effect, so it runs before the focus keeper looks.
 */
export function useFocusInvalid(form: RefObject<HTMLElement>, error: ApiError | undefined): void {
  useLayoutEffect(() => {
    if (error) focusFirstInvalid(form.current);
  }, [error]);
}
