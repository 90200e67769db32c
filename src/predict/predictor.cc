#include "predict/matrix.h"
