"""Blackjack (Sutton & Barto's rules, as gymnasium registers ``Blackjack-v1``).

Two tools, ``stick`` and ``hit``. The observation says your cards, your sum, whether an ace counts
as 11, and the dealer's face-up card; the dealer's other cards are shown (and put in the state)
only once the hand is over. Success is a won hand. The oracle is a fixed rule (hit below 17,
stick otherwise), which is not guaranteed to win; it has no start-state perturbations.
"""

from __future__ import annotations

from typing import Any

from envharness.bridges.gymnasium.domains import Domain, Moment, register_domain
from envharness.bridges.gymnasium.tabular import INT

__all__ = ["BlackjackDomain"]

_STAND_ON = 17
_ENDINGS = {"win": "you win", "draw": "it is a draw", "loss": "you lose", "bust": "you went bust"}


def _card(value: int) -> str:
    return "A" if int(value) == 1 else str(int(value))


def _hand(cards: list[int]) -> int:
    total = sum(cards)
    return total + 10 if 1 in cards and total + 10 <= 21 else total


class BlackjackDomain(Domain):
    """Blackjack: beat the dealer without going over 21; success is a won hand."""

    family = "blackjack"
    classes = ("gymnasium.envs.toy_text.blackjack:BlackjackEnv",)

    def actions(self) -> list[tuple[str, str]]:
        """``stick`` (gymnasium's 0) and ``hit`` (1)."""
        return [
            ("stick", "Stop drawing; the dealer then plays and the hand is scored."),
            ("hit", "Draw one more card; going over 21 loses at once."),
        ]

    def instruction(self) -> str:
        """The rules and the rewards."""
        return (
            "Play one hand of blackjack against the dealer. Cards count their number, face cards "
            "10, an ace 1 or 11. hit draws a card (over 21 and you lose); stick ends your turn, "
            "then the dealer draws to 17 or more. Win by being closer to 21 than the dealer: "
            "reward +1 for a win, 0 for a draw, -1 for a loss."
        )

    def _cards(self, hand: str) -> list[int]:
        return [int(c) for c in getattr(self.env, hand, None) or ()]

    def describe(self, moment: Moment) -> str:
        """Your cards and sum, the dealer's face-up card, and the dealer's hand once it is over."""
        total, showing, ace = moment.raw
        cards = ", ".join(_card(c) for c in self._cards("player"))
        text = (
            f"Your cards: {cards} (sum {total}, usable ace: {'yes' if ace else 'no'}). "
            f"The dealer shows {_card(showing)}."
        )
        if moment.ended:
            dealer = self._cards("dealer")
            text += f" The dealer's cards: {', '.join(map(_card, dealer))} (sum {_hand(dealer)})."
        return text

    def outcome(self, moment: Moment) -> str | None:
        """``win``, ``draw``, ``loss``, ``bust``, ``time_limit`` or ``None``."""
        if not moment.terminated:
            return "time_limit" if moment.truncated else None
        if moment.reward > 0:
            return "win"
        if moment.reward == 0:
            return "draw"
        return "bust" if moment.raw[0] > 21 else "loss"

    def ending(self, moment: Moment) -> str:
        """Win, draw, loss or bust."""
        return _ENDINGS.get(self.outcome(moment) or "", "the time limit was reached")

    def success(self, moment: Moment) -> bool:
        """Success: the hand was won (reward > 0)."""
        return moment.terminated and moment.reward > 0

    def fields(self, moment: Moment) -> dict[str, Any]:
        """Your sum, cards and ace; the dealer's face-up card (all cards once it is over)."""
        total, showing, ace = moment.raw
        return {
            "player_sum": int(total),
            "dealer_card": int(showing),
            "usable_ace": bool(ace),
            "player_cards": self._cards("player"),
            "dealer_cards": self._cards("dealer") if moment.ended else [int(showing)],
        }

    def field_schemas(self) -> dict[str, Any]:
        """The schemas of :meth:`fields`."""
        cards = {"type": "array", "items": INT}
        return {
            "player_sum": {**INT, "description": "Your hand's value (an ace is 11 if usable)."},
            "dealer_card": {**INT, "description": "The dealer's face-up card (1 = ace)."},
            "usable_ace": {"type": "boolean", "description": "You hold an ace counted as 11."},
            "player_cards": {**cards, "description": "Your cards (1 = ace, face cards 10)."},
            "dealer_cards": {
                **cards,
                "description": "The dealer's cards: only the face-up one until the hand is over.",
            },
        }

    def oracle(self, moment: Moment) -> list[int]:
        """The next move of a fixed rule: hit below 17, stick otherwise (it may lose)."""
        if moment.ended:
            return []
        return [1] if moment.raw[0] < _STAND_ON else [0]


register_domain(BlackjackDomain)
