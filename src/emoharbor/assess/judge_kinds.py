"""The judge forms' old module name, still read: a user's own judge form written before the rename imports
``register_judge_kind`` and the form classes from here (the forms are ``judge_forms.py``)."""

from .judge_forms import ConversationForm as ConversationKind
from .judge_forms import JudgeForm as JudgeKind
from .judge_forms import PairForm as PairKind
from .judge_forms import ReplyForm as ReplyKind
from .judge_forms import judge_form as judge_kind
from .judge_forms import register_judge_form as register_judge_kind

__all__ = ["ConversationKind", "JudgeKind", "PairKind", "ReplyKind", "judge_kind", "register_judge_kind"]
