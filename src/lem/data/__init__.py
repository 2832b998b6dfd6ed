"""Real data: downloads, MADLAD-400 extraction, dataset loaders and the leakage guard.

Every loader counts the defects it repairs or drops and logs them in one summary line, so a change in
the numbers of a paper run can be traced to the data rather than guessed at.
"""

from __future__ import annotations
