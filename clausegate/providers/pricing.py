"""Cost in EUR of model calls, from token counts and a block's price per million tokens."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from clausegate.review.schemas import Cost

__all__ = ["Pricing", "cost_eur"]


def cost_eur(input_tokens: int, output_tokens: int, *, eur_per_million_input: float,
             eur_per_million_output: float) -> float:
    """EUR for one call's tokens, rounded to 1/1000 cent (costs add up over a batch)."""
    total = input_tokens * eur_per_million_input + output_tokens * eur_per_million_output
    return round(total / 1_000_000, 5)


class Pricing(BaseModel):
    """A block's prices; ``cost`` totals a list of ModelResponses into a ``schemas.Cost``."""

    model_config = ConfigDict(frozen=True)

    eur_per_million_input_tokens: float = Field(0.0, ge=0)
    eur_per_million_output_tokens: float = Field(0.0, ge=0)

    def eur(self, input_tokens: int, output_tokens: int) -> float:
        return cost_eur(
            input_tokens,
            output_tokens,
            eur_per_million_input=self.eur_per_million_input_tokens,
            eur_per_million_output=self.eur_per_million_output_tokens,
        )

    def cost(self, responses: Iterable) -> Cost:
        """Calls, tokens and EUR of ``responses`` (anything with input_tokens/output_tokens).  Each
        call is priced on its own, as a provider bills it, so a total equals the sum of the amounts
        recorded call by call in the spend ledger."""
        items = list(responses)
        return Cost(
            calls=len(items),
            input_tokens=sum(r.input_tokens for r in items),
            output_tokens=sum(r.output_tokens for r in items),
            eur=round(sum(self.eur(r.input_tokens, r.output_tokens) for r in items), 6),
        )
