"""OSWorld's ``DesktopEnv`` interface over a pool environment: `actions` parses OSWorld's
two action spaces (``computer_13`` and ``pyautogui``) strictly and says, for each action,
which of cleanroom's policy actions do the same, which control outcome it is (``WAIT``,
``FAIL``, ``DONE``), or what cleanroom's policy API still lacks for it."""
