// The ErrorCode export: each code typed as its own literal, the union of them as the
// ErrorCode type; an unknown code does not compile.
import { ErrorCode } from '../../index.js';

export function codes(error: { code?: string }): ErrorCode | undefined {
  const gapless: 'GAPLESS_UNSUPPORTED_OPERATION' = ErrorCode.GAPLESS_UNSUPPORTED_OPERATION;
  const notFound: ErrorCode = ErrorCode.SEQUENCE_NOT_FOUND;
  // @ts-expect-error no such code
  const unknown = ErrorCode.NO_SUCH_CODE;
  // @ts-expect-error the table is read-only
  ErrorCode.SERVER = 'SERVER';
  void unknown;
  return error.code === gapless || error.code === notFound ? (error.code as ErrorCode) : undefined;
}
