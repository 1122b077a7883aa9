"""Learning's models, by sub-domain; imported here so that Django finds them under ``learning.models``."""

from learning.models.agent import AgentLearning, LearningUsage
from learning.models.memories import Memory
from learning.models.messages import ChatMessage, PromptPattern
from learning.models.preferences import PREFERENCE_CATEGORIES, Preference
from learning.models.taste import CommandDecision, CommandRun, TastePattern
from learning.models.undo import UNDO_SUBJECTS, UndoEntry
from learning.models.workflows import LearnedWorkflow

__all__ = [
    "PREFERENCE_CATEGORIES",
    "UNDO_SUBJECTS",
    "AgentLearning",
    "ChatMessage",
    "CommandDecision",
    "CommandRun",
    "LearnedWorkflow",
    "LearningUsage",
    "Memory",
    "Preference",
    "PromptPattern",
    "TastePattern",
    "UndoEntry",
]
