#include "predict/forecast.h"
