"""The X11 layer of an environment: its Xvfb display and cookie, input (XTest, keys), the
screen and its windows, the clipboard owner and bridge, and AT-SPI reading."""
