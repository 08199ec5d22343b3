import { AppError } from '../http/app-error.js';

/**
 * A priority range whose minimum is above its maximum would select nothing: refused, for subscriptions and
 * streams alike. `names` are the fields as the request names them.
 */
export function checkPriorityRange(
  min: number | undefined,
  max: number | undefined,
  names: { min: string; max: string },
): void {
  if (min !== undefined && max !== undefined && min > max) {
    throw new AppError('VALIDATION_ERROR', `${names.min} must not exceed ${names.max}`, {
      details: { field: names.min, reason: `greater than ${names.max}` },
    });
  }
}
